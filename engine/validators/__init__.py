"""Validity filters: importing this package registers every bundled filter."""

from __future__ import annotations

from typing import Any

from engine.core.errors import ConfigError
from engine.validators import (  # noqa: F401  (registration)
    classifier_confidence,
    discriminator,
    feature_density,
    ssim_nearest,
    vae_reconstruction,
)
from engine.validators.base import VALIDATORS, Validator


def check_validators(
    chosen: dict[str, float | None] | None, generator: Any, dataset: Any = None
) -> None:
    """ConfigError (one line) for a filter that does not exist or cannot score this
    generator's images (on this dataset, where given)."""
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
        why = VALIDATORS.get(name).check(generator, dataset)
        if why is not None:
            raise ConfigError(why)


def default_validators(generator: Any) -> dict[str, float | None]:
    """Every filter run by default (`by_default`) that can score this generator's images,
    at its default threshold."""
    return {
        n: None
        for n in VALIDATORS.names()
        if VALIDATORS.get(n).by_default and VALIDATORS.get(n).check(generator) is None
    }


__all__ = ["VALIDATORS", "Validator", "check_validators", "default_validators"]
