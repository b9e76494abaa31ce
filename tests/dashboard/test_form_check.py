"""dashboard/form_check.py: the projected duration, and a model's own messages in the
form's words."""

from __future__ import annotations

import pytest

from dashboard.form_check import choice_problems, in_words, problems, projected_seconds
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


LABELS = {
    "classifier_b": "Second classifier",
    "generator": "Generator",
    "target": "Class to reach",
    "target_class": "Seed class",
    "perturbation": "Step preset",
}


@pytest.mark.parametrize(
    ("engine_said", "page_says"),
    [
        (  # a field path, as a study's blocking factor said it
            "Block: strategy_params.perturbation = high",
            "Block: “Step preset” = high",
        ),
        (
            "strategy 'nsga2' searches for disagreements of two classifiers; name the second "
            "one with classifier_b (--classifier-b)",
            "Strategy 'nsga2' searches for disagreements of two classifiers; name the second "
            "one with “Second classifier”",
        ),
        (
            "target=3 equals target_class (the seeds' class); drop target (--target)",
            "Class to reach = 3 equals “Seed class” (the seeds' class); drop target",
        ),
        ("use --generator vae", "Use “Generator” vae"),
    ],
)
def test_an_engine_message_reads_in_the_form_s_words(engine_said, page_says):
    assert in_words(engine_said, LABELS) == page_says


def test_choices_that_cannot_go_together_are_said_by_the_plug_ins(monkeypatch):
    """Argus's generator rule and NSGA-II's two classifiers come from the strategy and
    objective plug-ins, without loading a model."""
    from engine.models import zoo

    monkeypatch.setattr(zoo, "load_generator", None)  # never called: the card is enough
    base = {"dataset": "mnist", "classifier": "mnist-convnet", "classifier_b": None}
    gan, vae = zoo.load_card("mnist-gan"), zoo.load_card("mnist-vae")
    (argus,) = choice_problems(
        {**base, "generator": "mnist-gan", "strategy": "interpolate"}, gan, LABELS
    )
    assert "needs an encoder generator" in argus and "--" not in argus
    assert (
        choice_problems({**base, "generator": "mnist-vae", "strategy": "interpolate"}, vae, LABELS)
        == []
    )
    (nsga,) = choice_problems({**base, "generator": "mnist-gan", "strategy": "nsga2"}, gan, LABELS)
    assert "“Second classifier”" in nsga and "classifier_b" not in nsga
    both = {**base, "classifier_b": "mnist-lenet5", "generator": "mnist-gan", "strategy": "nsga2"}
    assert choice_problems(both, gan, LABELS) == []
    # A pixel-space baseline searches its own generator: the box's GAN is not asked.
    pixel = {**base, "generator": "pixel", "strategy": "pixel-ga"}
    assert choice_problems(pixel, None, LABELS) == []
