"""A classifier measured at about chance accuracy is added with a warning in words, not
refused: one added at 12.1% on 10 classes was silently listed beside 98% models (issue 36,
walk finding 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.models.measure import chance_note
from tests.engine.classifiers.test_onnx import Net, export
from tests.engine.models.test_importing import models_cli, user_home  # noqa: F401


def card(accuracy: float | None, classes: int = 10) -> dict:
    metrics = {} if accuracy is None else {"test_accuracy": accuracy}
    return {"dataset": "mnist", "classes": classes, "metrics": metrics}


@pytest.mark.parametrize(
    "accuracy, classes, chance",
    [
        (0.121, 10, "10%"),
        (0.069, 10, "10%"),
        (0.149, 10, "10%"),
        (0.54, 2, "50%"),
        (0.014, 100, "1%"),
    ],
)
def test_about_chance_is_said_in_words(accuracy: float, classes: int, chance: str):
    assert chance_note(card(accuracy, classes)) == (
        f"{accuracy:.1%} on the mnist test split: about chance ({chance}); is it the right "
        "dataset or preprocessing?"
    )


@pytest.mark.parametrize(
    "accuracy, classes", [(0.985, 10), (0.151, 10), (0.56, 2), (0.016, 100), (None, 10)]
)
def test_a_model_clear_of_chance_or_unmeasured_gets_no_warning(accuracy, classes):
    assert chance_note(card(accuracy, classes)) is None


def test_models_import_warns_but_adds_a_chance_level_classifier(user_home: Path, tmp_path):  # noqa: F811
    untrained = export(Net(), tmp_path / "untrained.onnx")
    said = models_cli(["import", str(untrained), "--dataset", "mnist"], user_home)
    assert "imported untrained (onnx) for mnist" in said  # added all the same
    warning = said[said.index("warning: ") :]
    assert warning.startswith("warning: ") and "on the mnist test split: about chance (10%); " in (
        warning
    ), said
    assert (user_home / "models" / "untrained" / "card.json").is_file()
