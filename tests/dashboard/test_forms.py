"""AppTest: the New campaign form explains itself (issue 11, "forms that explain
themselves"): limits from the validating models, every invalid field named in a sentence,
and a confirmation showing the estimate before a campaign projected over 10 minutes."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from dashboard.form_check import limits, problems, projected_seconds
from engine.campaign.config import CampaignConfig
from engine.search.strategies import STRATEGIES

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")


@pytest.fixture
def page(tmp_path, monkeypatch):
    monkeypatch.setenv("LATENTFUZZ_HOME", str(tmp_path))
    st.cache_resource.clear()
    launched = []
    monkeypatch.setattr("dashboard.launch.subprocess.Popen", lambda a, **k: launched.append(a))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("../pages/new_campaign.py")
    at.launched = launched
    return at.run()


def number(at: AppTest, label: str):
    return next(n for n in at.number_input if n.label == label)


def launch_button(at: AppTest):
    return next(b for b in at.button if b.label == "Launch")


def test_seed_fields_say_their_limits_from_the_campaign_model(page):
    seeds = number(page, "Seeds")
    assert seeds.help == "From 1 to 100,000."  # CampaignConfig.seeds: ge=1, le=100_000
    assert number(page, "Random seed").help == f"At least 0 and less than {2**63:,}."
    assert limits(CampaignConfig, "seed")["max_value"] == 2**53 - 1  # the browser's limit


def test_out_of_model_values_are_named_at_launch_with_what_was_entered(page):
    """Streamlit's own min/max refused a typed 0 without a word (a red box, the reason in
    a tooltip) and Launch did nothing: the model's bounds are checked at Launch."""
    number(page, "Seeds").set_value(0)
    number(page, "Random seed").set_value(-1)
    launch_button(page).click().run()
    text = page.error[0].value.replace("\\", "")
    assert text.startswith("Cannot launch; please fix:")
    assert "Seeds must be at least 1 (you entered 0)." in text
    assert "Random seed must be at least 0 (you entered -1)." in text
    assert page.launched == []
    sentences = problems(CampaignConfig, {"seeds": 0, "seed": -1, "name": "x" * 201},
                         {"seeds": "Seeds", "seed": "Random seed"})  # fmt: skip
    assert sentences == [
        "Name must be at most 200 characters (it has 201).",
        "Seeds must be at least 1 (you entered 0).",
        "Random seed must be at least 0 (you entered -1).",
    ]


def test_a_cross_field_rule_reads_as_a_sentence(page):
    number(page, "Population").set_value(5)
    launch_button(page).click().run()
    (err,) = page.error
    text = err.value.replace("\\", "")
    assert text.startswith("Cannot launch; please fix:")
    # Named as the form labels them (it said "best_left=10 ... population=5"; the GA's
    # best_left is now elites, labelled Elites).
    assert "Elites = 10 must be smaller than Population = 5" in text
    assert "Value error" not in text and "strategy_params" not in text
    assert page.launched == []


def test_a_seed_count_the_dataset_cannot_give_is_refused_before_any_question(page):
    number(page, "Seeds").set_value(100_000)
    launch_button(page).click().run()
    assert not page.warning and page.launched == []
    assert "ask for at most 1,000" in page.error[0].value


def test_a_long_campaign_asks_for_confirmation_with_its_estimate(page):
    number(page, "Seeds").set_value(1000)
    number(page, "Generations").set_value(100_000)
    launch_button(page).click().run()
    assert not page.exception and page.launched == []
    (warn,) = page.warning
    assert "projected to take about" in warn.value and "1,000 seeds" in warn.value
    go = next(b for b in page.button if b.key == "confirm")
    go.click().run()
    assert len(page.launched) == 1


def test_a_short_campaign_launches_without_asking(page):
    number(page, "Seeds").set_value(3)
    launch_button(page).click().run()
    assert not page.warning and len(page.launched) == 1


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
    said = problems(Params, {"perturbation": "strong", "step": 1e9}, {})
    assert said[0].startswith("Custom step = 1000000000.0 given with Step preset = 'strong'")
