"""Validity filters: importing this package registers every bundled filter."""

from __future__ import annotations

from typing import Any

from engine.core.errors import ConfigError
from engine.validators import discriminator, ssim_nearest  # noqa: F401  (registration)
from engine.validators.base import VALIDATORS, Validator


def check_validators(chosen: dict[str, float | None] | None, generator: Any) -> None:
    """ConfigError (one line) for a filter that does not exist or cannot score this
    generator's images."""
    for name, threshold in (chosen or {}).items():
        if name not in VALIDATORS:
            raise ConfigError(
                f"validity filter {name!r} unknown; expected one of {VALIDATORS.names()}"
            )
        lo, hi = VALIDATORS.get(name).score_range
        if threshold is not None and not lo <= threshold <= hi:
            raise ConfigError(
                f"validity filter {name!r}: threshold {threshold} is outside its scores' "
                f"range [{lo:g}, {hi:g}], so every image would pass or none; pick one inside"
            )
        why = VALIDATORS.get(name).check(generator)
        if why is not None:
            raise ConfigError(why)


def default_validators(generator: Any) -> dict[str, float | None]:
    """Every filter that can score this generator's images, at its default threshold."""
    return {n: None for n in VALIDATORS.names() if VALIDATORS.get(n).check(generator) is None}


__all__ = ["VALIDATORS", "Validator", "check_validators", "default_validators"]
