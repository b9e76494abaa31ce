"""Model selection (DiffGAN RQ4, engine/studies/selection.py, `latentfuzz select`): the
selector learns whom to trust, its ensemble is measured honestly, and wrong input is
refused in one line."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.cli.main import app
from engine.core.errors import LatentfuzzError
from engine.studies.selection import (
    A,
    B,
    Outputs,
    Selector,
    accuracies,
    run_selection,
    selection_accuracy,
    split_by_group,
)

K = 5


def softmax_at(pred: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Noisy softmax vectors whose argmax is ``pred``."""
    logits = rng.normal(0, 1, (len(pred), K))
    logits[np.arange(len(pred)), pred] = logits.max(1) + rng.uniform(0.5, 4, len(pred))
    e = np.exp(logits)
    return e / e.sum(1, keepdims=True)


def constructed(n: int, seed: int) -> Outputs:
    """Triggering inputs where A is always right on class 3 (B then wrong) and B always
    right on every other class (A then wrong, never answering 3): the rule "trust A
    exactly when it says 3" is perfect, and a selector must find it."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)

    def wrong(c: int, also_not: int) -> int:
        return int(rng.choice([k for k in range(K) if k not in (c, also_not)]))

    a = np.array([3 if c == 3 else wrong(c, 3) for c in y])  # A's mistakes never say 3
    b = np.array([wrong(3, 3) if c == 3 else c for c in y])
    return Outputs(softmax_at(a, rng), softmax_at(b, rng), y, np.arange(n) // 10)


def test_the_constructed_case_is_what_it_says():
    o = constructed(600, 1)
    assert (o.pred_a != o.pred_b).all()
    who = o.who()
    assert (who[o.label == 3] == A).all() and (who[o.label != 3] == B).all()


def test_the_selector_learns_to_trust_a_on_its_class_and_b_elsewhere():
    train, held = constructed(600, 1), constructed(300, 2)
    sel = Selector(seed=0).fit(train)
    on_3 = held.take(held.label == 3)
    assert (sel.choose(on_3) == A).mean() >= 0.98
    acc, n = selection_accuracy(sel, held)
    assert n == 300 and acc >= 0.95
    figs = accuracies(sel, held)
    assert figs["selected"] >= 0.95 > max(figs["a"], figs["b"])


def test_a_selector_that_only_ever_saw_a_right_trusts_a():
    o = constructed(200, 3)
    only_3 = o.take(o.label == 3)
    sel = Selector().fit(only_3)
    assert sel.only == A and (sel.choose(o) == A).all()


def test_both_wrong_inputs_teach_nothing_and_none_to_learn_is_refused():
    o = constructed(100, 4)
    wrong = Outputs(o.pa, o.pb, (o.pred_a + o.pred_b + 1) % K, o.group)
    wrong = wrong.take((wrong.label != wrong.pred_a) & (wrong.label != wrong.pred_b))
    with pytest.raises(LatentfuzzError, match="none has exactly one classifier right") as e:
        Selector().fit(wrong)
    assert "\n" not in str(e.value)


def test_agreeing_inputs_keep_their_label_and_the_split_holds_searches_out_whole():
    o = constructed(300, 5)
    same = Outputs(o.pa, o.pa, o.label, o.group)  # A and B agree everywhere
    sel = Selector().fit(o)
    assert (sel.predict(same) == same.pred_a).all()
    train, held = split_by_group(o, seed=0)
    assert len(train) + len(held) == len(o)
    assert not set(train.group) & set(held.group)
    assert len(set(held.group)) == round(0.3 * 30)
    one = o.take(o.group == 0)
    with pytest.raises(LatentfuzzError, match="at least 2 searches"):
        split_by_group(one, 0)


@pytest.fixture(autouse=True)
def _process_home(monkeypatch):
    """`--home` makes its folder the process's home (engine/core/home.py); put it back after."""
    import engine.core.home

    monkeypatch.setattr(engine.core.home, "_current", engine.core.home._current)


@pytest.fixture(scope="module")
def diffed(tmp_path_factory):
    """A tiny GA differential campaign (the bundled GAN, convnet vs LeNet-5) and a
    single-classifier one, in one home."""
    import engine.core.home

    before = engine.core.home._current
    home = tmp_path_factory.mktemp("select")
    params = {"generations": 6, "population": 20, "stop_at_failure": False, "best_left": 5}
    base = {"generator": "gan", "classifier": "convnet", "strategy": "ga", "seeds": 4}
    diff = parse_config({**base, "classifier_b": "lenet5", "seed": 3, "strategy_params": params})
    single = parse_config({**base, "seeds": 2, "seed": 1, "strategy_params": params})
    try:
        yield home, run_campaign(diff, home).campaign_id, run_campaign(single, home).campaign_id
    finally:
        engine.core.home._current = before


def test_a_real_campaign_end_to_end(diffed):
    home, cid, _ = diffed
    (row,) = run_selection([cid], [cid], home, valid_only=False)
    assert row["inputs"] == row["only_a_right"] + row["only_b_right"] + row["both_wrong"] > 0
    assert row["test_n"] == 1000 and 0 < row["test_disagree"] < 1000
    # On the test split the ensemble differs from A only where A and B disagree.
    assert abs(row["test_selected"] - row["test_a"]) <= row["test_disagree"] / 1000
    assert row["fresh0_n"] == row["inputs"] and row["fresh0_a"] is not None
    assert row["majority"] in ("A", "B")
    assert row["held_out_majority"] is None or 0 <= row["held_out_majority"] <= 1


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    """Under xdist the console is 80 columns: the tables' cells wrap and ids are cut."""
    from engine.cli.common import console

    monkeypatch.setattr(console, "_width", 250)


def test_the_cli_prints_the_table_and_refuses_wrong_campaigns_in_one_line(diffed):
    home, cid, single = diffed
    ok = CliRunner().invoke(app, ["select", "--campaign", cid, "--all-inputs", "--home", str(home)])
    assert ok.exit_code == 0, ok.output
    out = " ".join(ok.output.split())
    assert "mnist-convnet" in out and "held-out selection" in out
    for bad, said in (
        (single, "tests one classifier (mnist-convnet); select needs a differential campaign"),
        ("nope", "no campaign 'nope'"),
    ):
        res = CliRunner().invoke(app, ["select", "--campaign", bad, "--home", str(home)])
        assert isinstance(res.exception, LatentfuzzError), res.output
        assert said in str(res.exception) and "\n" not in str(res.exception)
    assert B == 1


def test_peoples_verdicts_replace_the_generators_label(diffed):
    from datetime import datetime

    from engine.labelling import validity as labelling
    from engine.studies.selection import people_labels
    from store import Store, judging
    from store import labels as ls

    home, cid, _ = diffed
    store = Store(home / "latentfuzz.duckdb")
    cfg = labelling.StudyConfig(campaigns=[cid], k=1, gold_rate=0.0, triggering=True, sample=40)
    sid = labelling.create_study(store, home, cfg)
    items = ls.items(store, sid).set_index("item_id")
    # People give A's label to even items, B's to odd ones: who is right alternates.
    judging.join(store, sid, "ann")
    while (item := judging.next_item(store, sid, "ann")) is not None:
        row = items.loc[item]
        said = row["predicted"] if item % 2 == 0 else row["predicted_b"]
        judging.answer(store, sid, item, "ann", int(said), datetime.now())
    people = people_labels(store, sid)
    assert len(people) == len(items)
    for item, row in items.iterrows():
        entry = int(row["external_id"].split(":")[1])
        want = row["predicted"] if item % 2 == 0 else row["predicted_b"]
        assert people[(cid, entry)] == want
    (r,) = run_selection([cid], [], home, study=sid)
    assert r["verdicts"] == f"people (study {sid})" and r["both_wrong"] == 0
    assert r["only_a_right"] > 0 and r["only_b_right"] > 0
    assert r["inputs"] <= len(items)  # only what people judged
    unanswered = labelling.create_study(store, home, cfg.model_copy(update={"seed": 1}))
    with pytest.raises(LatentfuzzError, match=f"has no decided verdict on .* campaign {cid}"):
        run_selection([cid], [], home, study=unanswered)
