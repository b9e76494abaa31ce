"""dashboard/form_check.py: the projected duration, and a model's own messages in the
form's words."""

from __future__ import annotations

import pytest

from dashboard.form_check import problems, projected_seconds
from engine.search.strategies import STRATEGIES


def test_projection_is_seeds_x_budget_x_measured_time():
    cards = [{"inference": {"ms_per_image_b25": 0.1}}, {"inference": {"ms_per_image_b25": 0.4}}]
    assert projected_seconds(10, 1000, cards) == pytest.approx(5.0)
    assert projected_seconds(10, 1000, [cards[0], None]) is None  # unmeasured: no estimate
    ga = STRATEGIES.get("ga")
    assert problems(ga.Params, {"population": 1}, {}) == [
        "Population must be at least 2 (you entered 1)."
    ]


def test_a_models_own_message_names_settings_as_the_form_does():
    Params = STRATEGIES.get("ga").Params
    assert problems(Params, {"perturbation": "custom"}, {}) == [
        "Step preset = 'custom' needs Custom step = <positive float>."
    ]  # it said "perturbation='custom' needs step=<positive float>"
    said = problems(Params, {"perturbation": "strong", "step": 5.0}, {})
    assert said[0].startswith("Custom step = 5.0 given with Step preset = 'strong'")
