"""Widgets for a strategy's parameters, built from its pydantic model (fields, bounds,
descriptions), so a new strategy needs no page code.

Per field: int and float -> number_input, the model's bounds in its help (checked at
Launch); bool -> checkbox; a Literal, or a str field whose Field gives
``json_schema_extra={"options": [...]}`` -> selectbox; an optional field (default None)
gets a "default" choice (selectbox) or an empty box that says "default" (number_input).
The label is the field's title, else its name.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

DEFAULT = "default"


def _base(annotation: Any) -> tuple[Any, bool]:
    """(the type without None, whether None is allowed)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return (args[0] if len(args) == 1 else annotation), len(args) < len(
            typing.get_args(annotation)
        )
    return annotation, False


def allowed(info: FieldInfo) -> str | None:
    """The field's range in words, exclusive bounds as such: 'from 1 to 100,000', 'more
    than 0', 'more than 0 and less than 1', or None."""
    parts = []
    lo_in = hi_in = None
    for m in info.metadata:
        if isinstance(m, annotated_types.Ge):
            lo_in = f"{m.ge:,}"
        elif isinstance(m, annotated_types.Gt):
            parts.append(f"more than {m.gt:,}")
        elif isinstance(m, annotated_types.Le):
            hi_in = f"{m.le:,}"
        elif isinstance(m, annotated_types.Lt):
            parts.append(f"less than {m.lt:,}")
    if lo_in and hi_in:
        return f"from {lo_in} to {hi_in}"
    parts = (
        ([f"at least {lo_in}"] if lo_in else []) + parts + ([f"at most {hi_in}"] if hi_in else [])
    )
    return " and ".join(parts) or None


def label(name: str, info: FieldInfo) -> str:
    return info.title or name.replace("_", " ").capitalize()


def options(annotation: Any, info: FieldInfo) -> list[Any] | None:
    if typing.get_origin(annotation) is Literal:
        return list(typing.get_args(annotation))
    extra = info.json_schema_extra
    return list(extra["options"]) if isinstance(extra, dict) and "options" in extra else None


def widget(st_like, name: str, info: FieldInfo, default: Any, key: str) -> Any:
    """One widget for field ``name`` on ``st_like`` (st or a column); returns its value,
    None for "default"."""
    annotation, optional = _base(info.annotation)
    text, help_ = label(name, info), info.description
    choices = options(annotation, info)
    if choices is not None:
        opts = [DEFAULT, *choices] if optional else choices
        index = opts.index(default) if default in opts else 0
        v = st_like.selectbox(text, opts, index=index, help=help_, key=key)
        return None if v == DEFAULT else v
    if annotation is bool:
        return st_like.checkbox(text, value=bool(default), help=help_, key=key)
    if annotation in (int, float):
        is_int = annotation is int
        cast = int if is_int else float
        # The range goes into the help, not into min_value / max_value: Streamlit refuses
        # a typed value outside them silently, where Launch names the field and the value
        # (dashboard/form_check.py).
        if rng := allowed(info):
            help_ = f"{help_ or ''} ({rng})".strip()
        kwargs: dict[str, Any] = {"help": help_, "key": key}
        if is_int:
            kwargs["step"] = 1  # an empty (optional) box would otherwise take decimals
        # An optional field left empty is "default" (it showed 0.00000, which read as a
        # step of zero).
        kwargs["value"] = None if default is None else cast(default)
        if optional:
            kwargs["placeholder"] = DEFAULT
        if not is_int:
            kwargs["format"] = "%.5f"
        v = st_like.number_input(text, **kwargs)
        return None if v is None else cast(v)
    return st_like.text_input(text, value="" if default is None else str(default), key=key)


def param_form(
    st_like,
    model: type[BaseModel],
    defaults: dict[str, Any] | None = None,
    columns: int = 4,
    key: str = "param",
) -> dict[str, Any]:
    """Widgets for every field of ``model`` in ``columns`` columns; returns the raw
    parameters set (fields left at "default" are omitted)."""
    defaults = defaults or {}
    fields = list(model.model_fields.items())
    raw: dict[str, Any] = {}
    for start in range(0, len(fields), columns):
        cols = st_like.columns(columns)
        for col, (name, info) in zip(cols, fields[start : start + columns], strict=False):
            default = defaults.get(name, info.default)
            v = widget(col, name, info, default, f"{key}.{name}")
            if v is not None:
                raw[name] = v
    return raw
