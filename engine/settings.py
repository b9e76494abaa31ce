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
                if isinstance(value, bool) and field is not None and _numeric(field.annotation):
                    raise ValueError(f"{key} is {str(value).lower()}, expected a number")
        return data


def _numeric(annotation: Any) -> bool:
    """An int or float field (or one of those or None) that takes no bool."""
    union = isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union
    args = typing.get_args(annotation) if union else (annotation,)
    return bool not in args and any(a in (int, float) for a in args)
