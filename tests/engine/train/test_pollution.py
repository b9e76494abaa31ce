"""`latentfuzz train classifier --pollute A:B:RATE` (SINVAD's polluted training data):
exactly the stated share of class A relabelled B, seeded, stated in the card, and what
the model trains on; wrong input refused in one line before anything is written."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from typer.testing import CliRunner

from engine.cli.main import app
from engine.core.errors import ConfigError
from engine.train.classifier import pollute
from engine.train.settings import Pollution, parse_pollution
from tests.helpers import write_mnist_idx

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _process_home(monkeypatch):
    """`--home` makes its folder the process's home (engine/core/home.py); put it back after."""
    import engine.core.home

    monkeypatch.setattr(engine.core.home, "_current", engine.core.home._current)


def labels_of(n_per_class: int = 37, classes: int = 4) -> torch.Tensor:
    """Shuffled labels with n_per_class of each class (37: rates give odd counts)."""
    y = torch.arange(classes).repeat_interleave(n_per_class)
    return y[torch.randperm(len(y), generator=torch.Generator().manual_seed(5))]


@pytest.mark.parametrize("rate", [0.05, 0.1, 0.25, 0.5, 1.0])
def test_exactly_the_stated_share_of_a_is_relabelled_b(rate: float):
    y = labels_of()
    out, chosen = pollute(y, Pollution(1, 3, rate), torch.Generator().manual_seed(0))
    assert len(chosen) == round(rate * 37)
    changed = (out != y).nonzero().flatten()
    assert torch.equal(changed, chosen)  # exactly those, nothing else
    assert (y[chosen] == 1).all() and (out[chosen] == 3).all()
    assert int((out == 1).sum()) == 37 - len(chosen)
    assert int((out == 3).sum()) == 37 + len(chosen)
    for c in (0, 2):  # other classes untouched
        assert torch.equal(out[y == c], y[y == c])
    assert torch.equal(y, labels_of())  # the input is not modified (datasets cache it)


def test_seeded_and_nested_across_rates():
    y = labels_of()

    def draw(seed: int, rate: float) -> torch.Tensor:
        return pollute(y, Pollution(0, 2, rate), torch.Generator().manual_seed(seed))[1]

    assert torch.equal(draw(7, 0.3), draw(7, 0.3))
    assert not torch.equal(draw(7, 0.3), draw(8, 0.3))
    low, high = set(draw(7, 0.1).tolist()), set(draw(7, 0.4).tolist())
    assert low < high  # one seed's polluted sets are nested


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ("7:7:0.1", "both class 7"),
        ("7:1:0", "outside (0, 1]"),
        ("7:1:1.5", "outside (0, 1]"),
        ("7:1:nan", "outside (0, 1]"),
        ("7:1", "expected SOURCE:TARGET:RATE"),
        ("seven:1:0.1", "expected SOURCE:TARGET:RATE"),
    ],
)
def test_bad_forms_are_one_line_errors(raw: str, said: str):
    with pytest.raises(ConfigError) as e:
        parse_pollution(raw)
    assert said in str(e.value) and "\n" not in str(e.value)
    assert repr(raw) in str(e.value)  # what was received


def test_a_rate_that_relabels_none_is_refused():
    with pytest.raises(ConfigError, match=r"relabels none; give a rate of at least 1/37"):
        pollute(labels_of(), Pollution(1, 3, 0.01), torch.Generator())


@pytest.fixture
def idx_data(tmp_path: Path) -> Path:
    # 3 of MNIST's 10 classes over 40 images: 14 of class 0, 13 of classes 1 and 2.
    return write_mnist_idx(tmp_path / "idx", train=40, test=12, classes=3)


def train_args(data: Path, home: Path, *extra: str) -> list[str]:
    return [
        "train",
        "classifier",
        "--dataset",
        "mnist-idx",
        "--data-dir",
        str(data),
        "--home",
        str(home),
        "--epochs",
        "1",
        "--batch-size",
        "8",
        *extra,
    ]


def test_the_card_states_it_and_training_sees_the_polluted_labels(
    idx_data: Path, home: Path, monkeypatch
):
    seen: list[torch.Tensor] = []
    real = F.cross_entropy

    def recording(logits: torch.Tensor, target: torch.Tensor, *a, **kw):
        seen.append(target.detach().clone())
        return real(logits, target, *a, **kw)

    monkeypatch.setattr("engine.train.classifier.F.cross_entropy", recording)
    args = train_args(idx_data, home, "--pollute", "1:2:0.5", "--seed", "3", "--name", "p")
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "6 of 13 training images of class 1 relabelled 2" in " ".join(res.output.split())
    card = json.loads((home / "models" / "p" / "card.json").read_text())
    p = card["pollution"]
    assert (p["source"], p["target"], p["rate"], p["seed"]) == (1, 2, 0.5, 3)
    assert (p["relabelled"], p["of"]) == (6, 13)  # Python's round: 6.5 -> 6
    assert card["default"] is False  # the dataset had no classifier, yet not made default
    # One epoch of 5 batches covers all 40 images once: the labels trained on.
    trained = torch.cat(seen)
    assert len(trained) == 40
    assert [int((trained == c).sum()) for c in range(3)] == [14, 13 - 6, 13 + 6]
    # The card's digest names the same draw the seed gives again.
    from engine.datasets import get_dataset

    y = get_dataset("mnist-idx", idx_data).load("train").labels
    _, chosen = pollute(y, Pollution(1, 2, 0.5), torch.Generator().manual_seed(3))
    digest = hashlib.sha256(chosen.numpy().astype("<i8").tobytes()).hexdigest()
    assert p["indices_sha256"] == digest


def test_a_clean_run_has_no_pollution_in_its_card(idx_data: Path, home: Path):
    res = CliRunner().invoke(app, train_args(idx_data, home, "--name", "c"))
    assert res.exit_code == 0, res.output
    card = json.loads((home / "models" / "c" / "card.json").read_text())
    assert "pollution" not in card and card["default"] is True


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("1:12:0.5", "class 12 is out of range; mnist-idx has classes 0..9"),
        ("5:1:0.5", "the training split has no image of class 5"),
        ("-1:2:0.5", "class -1 is out of range"),
        ("1:1:0.5", "source and target are both class 1"),
        ("1:2:2", "rate 2 is outside (0, 1]"),
        ("1:2:0.01", "relabels none"),
    ],
)
def test_the_cli_refuses_in_one_line_and_writes_nothing(
    idx_data: Path, home: Path, spec: str, said: str
):
    res = CliRunner().invoke(app, [*train_args(idx_data, home), "--pollute", spec])
    assert isinstance(res.exception, ConfigError), res.output
    assert said in str(res.exception) and "\n" not in str(res.exception)
    assert not list(home.glob("models/*"))


def test_the_real_cli_prints_one_error_line_exit_2(idx_data: Path, home: Path, env: dict):
    cmd = [sys.executable, "-m", "engine.cli.main", *train_args(idx_data, home)]
    r = subprocess.run(
        [*cmd, "--pollute", "10:1:0.5"],
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        "error: --pollute 10:1:0.5: class 10 is out of range; mnist-idx has classes 0..9"
    ]
    assert not list(home.glob("models/*"))
