"""`latentfuzz pollution-study` (SINVAD RQ3, engine/studies/pollution.py): its options,
the ranks it reports, and (slow) one tiny run end to end."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from engine.cli.main import app
from engine.core.errors import ConfigError
from engine.studies.pollution import confusion, flags_first, parse_pair, parse_rates, rank_of


def test_rates_and_pair_parse_or_fail_in_one_line():
    assert parse_rates("0.4,0,0.1,0.1") == (0.0, 0.1, 0.4)
    assert parse_pair("7:1") == (7, 1)
    for raw in ("", "a", "0,1.5", "-0.1"):
        with pytest.raises(ConfigError, match=r"--rates .*expected comma-separated shares"):
            parse_rates(raw)
    for raw, said in (("7", "expected SOURCE:TARGET"), ("7:7", "must differ")):
        with pytest.raises(ConfigError, match=said) as e:
            parse_pair(raw)
        assert "\n" not in str(e.value)


def test_rank_counts_pairs_strictly_above_and_says_the_ties():
    v = pd.Series(
        [0.5, 0.2, 0.5, 0.0], index=pd.MultiIndex.from_tuples([(0, 1), (0, 2), (1, 0), (1, 2)])
    )
    assert rank_of(v, (0, 1)) == (1, 2)  # shares the top with (1, 0)
    assert rank_of(v, (0, 2)) == (3, 1)
    assert rank_of(v, (1, 2)) == (4, 1)


def test_confusion_counts_true_rows_and_predicted_columns():
    logits = torch.eye(3)[[0, 1, 1, 2]]  # predictions 0, 1, 1, 2

    def logits_of(x: torch.Tensor) -> torch.Tensor:
        return logits[x.flatten().long()]

    images = torch.arange(4).float().view(4, 1)
    labels = torch.tensor([0, 0, 1, 2])
    assert confusion(logits_of, images, labels, 3) == [[1, 1, 0], [0, 1, 0], [0, 0, 1]]


def test_flags_first_is_the_lowest_polluted_rate_ranked_first():
    df = pd.DataFrame(
        {
            "rate": [0, 0.1, 0.2, 0.4],
            "escape_rank": [1, 5, 1, 1],  # the clean model's rank does not count
            "test_rank": [30, 20, 4, 1],
        }
    )
    assert flags_first(df) == {"escape": 0.2, "test": 0.4}
    assert flags_first(df.assign(test_rank=2)) == {"escape": 0.2, "test": None}


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--per-pair", "0", "escape_per_pair: Input should be greater than or equal to 1"),
        ("--epochs", "0", "--epochs 0: expected 1 or more"),
        ("--generations", "0", "--generations 0: expected 1 or more"),
        ("--architecture", "nope", "--architecture 'nope' is unknown"),
        ("--pair", "7:12", "--pair 7:12: classes out of range"),
    ],
)
def test_bad_options_are_refused_before_anything_trains(home, monkeypatch, flag, value, said):
    import engine.core.home
    import engine.train.classifier

    monkeypatch.setattr(engine.core.home, "_current", engine.core.home._current)
    trained = []
    monkeypatch.setattr(
        engine.train.classifier, "train_classifier", lambda *a, **k: trained.append(a)
    )
    res = CliRunner().invoke(app, ["pollution-study", flag, value, "--home", str(home)])
    assert res.exception is not None and said in str(res.exception), res.output
    assert "\n" not in str(res.exception) and not trained
    assert not list(home.glob("models/*"))


@pytest.mark.slow
@pytest.mark.parametrize(("extra", "pairs"), [([], 90), (["--row-only"], 9)])
def test_a_tiny_study_end_to_end(home, monkeypatch, tmp_path, extra, pairs):
    import engine.core.home

    monkeypatch.setattr(engine.core.home, "_current", engine.core.home._current)
    csv = tmp_path / "p.csv"
    args = ["pollution-study", "--pair", "7:1", "--rates", "0,0.5", "--epochs", "1"]
    args += ["--per-pair", "1", "--generations", "2", "--csv", str(csv), "--home", str(home)]
    args += extra
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    df = pd.read_csv(csv)
    assert df["rate"].tolist() == [0, 0.5] and df["pairs"].tolist() == [pairs, pairs]
    assert df["relabelled"].tolist() == [0, 200] and df["of"].tolist() == [400, 400]
    assert (df["escape_attempts"] == 1).all() and (df["test_of"] == 100).all()
    assert (df["escape_rank"] <= pairs).all() and (df["test_rank"] <= pairs).all()
    assert "first rate at which the pair ranks 1" in res.output
