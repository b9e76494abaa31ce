"""dashboard/param_form.py: the range a field's bounds allow, in words."""

from __future__ import annotations

from dashboard.param_form import allowed


def test_a_range_says_which_bounds_are_exclusive():
    from pydantic import BaseModel, Field

    class P(BaseModel):
        n: int = Field(5, ge=1, le=100_000)
        step: float = Field(0.1, gt=0)
        decay: float = Field(0.5, gt=0, lt=1)
        seed: int = Field(0, ge=0)

    said = {k: allowed(i) for k, i in P.model_fields.items()}
    # "at least 0" for a step that must be more than 0 was refused at Launch.
    assert said == {
        "n": "from 1 to 100,000",
        "step": "more than 0",
        "decay": "more than 0 and less than 1",
        "seed": "at least 0",
    }
