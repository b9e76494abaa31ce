"""The base of every user-facing settings model (campaign, strategy, generator options)."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator


class Settings(BaseModel):
    """Frozen, no unknown keys, no NaN or infinity in any float (`step: .inf` would "find" a
    failure at once), and no true/false where a number is meant: pydantic reads `seeds:
    true` in a YAML file as 1 seed and the campaign ran without a word."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _no_bool_numbers(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, value in data.items():
                field = cls.model_fields.get(key)
                if field is not None and (found := _bool_number(field.annotation, value, key)):
                    where, said = found
                    raise ValueError(f"{where} is {str(said).lower()}, expected a number")
        return data


def _members(annotation: Any) -> tuple[Any, ...]:
    union = isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union
    return typing.get_args(annotation) if union else (annotation,)


def _bool_number(annotation: Any, value: Any, where: str) -> tuple[str, bool] | None:
    """`where` (or where inside it) a true/false stands for a number: a number field, or
    a mapping of numbers (`validators: {ssim-nearest: true}` read as the threshold 1.0)."""
    members = _members(annotation)
    if isinstance(value, bool):
        numeric = any(m in (int, float) for m in members)
        return (where, value) if numeric and bool not in members else None
    if isinstance(value, dict):
        for m in members:
            if typing.get_origin(m) is dict:
                inner = typing.get_args(m)[1]
                for k, v in value.items():
                    if found := _bool_number(inner, v, f"{where}.{k}"):
                        return found
    return None
