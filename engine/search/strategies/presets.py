"""Step presets: the GA's and random search's step as a fraction of the latent range.

Both strategies take ``perturbation`` (a preset name, or 'custom' with ``step``); the
check and the step in latent units are written here once.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from engine.search.strategies.base import SearchSpace

#: Step presets as fractions of the latent range r. low and high are GIFTbench's exactly;
#: strong is the practitioner's default: it finds failures for most seeds of every bundled
#: generator within 250 generations (README, "Effectiveness study").
PRESETS: dict[str, float] = {"low": 1e-4, "high": 1e-3, "strong": 1e-2}
CHOICES = (*PRESETS, "custom")


def perturbation_field() -> Any:
    """The ``perturbation`` field of a strategy with presets (its form offers the choices)."""
    return Field(
        "strong",
        title="Step preset",
        description=f"step preset ({', '.join(PRESETS)}) or 'custom' with step",
        json_schema_extra={"options": list(CHOICES)},
    )


def check_preset(perturbation: str, step: float | None) -> None:
    """Raise ValueError (one line) unless perturbation is a preset without step, or
    'custom' with step."""
    if perturbation not in CHOICES:
        raise ValueError(f"perturbation={perturbation!r}; expected one of {', '.join(CHOICES)}")
    if perturbation == "custom" and step is None:
        raise ValueError("perturbation='custom' needs step=<positive float>")
    if perturbation != "custom" and step is not None:
        raise ValueError(
            f"step={step} given with perturbation={perturbation!r}; "
            f"use perturbation='custom' to set the step yourself"
        )


def preset_step(perturbation: str, step: float | None, space: SearchSpace) -> float:
    """The step in latent units: the custom one, else the preset's fraction of the range."""
    return float(step) if perturbation == "custom" else space.range * PRESETS[perturbation]


class HasPresets:
    """Mixin of a strategy whose Params have ``perturbation`` and ``step``: the campaign
    row records its preset, and forms offer the preset choices."""

    has_presets: ClassVar[bool] = True
    params: Any

    @property
    def preset(self) -> str:
        return self.params.perturbation
