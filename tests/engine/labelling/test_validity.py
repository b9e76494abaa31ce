"""Validity studies: building a study, serving items, verdicts, statistics and exports."""

from __future__ import annotations

import multiprocessing as mp
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.core.errors import ConfigError
from engine.datasets import get_dataset
from engine.labelling.agreement import INVALID, UNSURE, verdicts
from engine.labelling.exchange import raw_export, wide_export
from engine.labelling.statistics import (
    agreement_table,
    campaign_validity,
    group_table,
    labeller_table,
    load,
    undecided,
)
from engine.labelling.validity import StudyConfig, create_study
from store import Store, judging
from store import campaigns as sc
from store import labels as ls
from tests.helpers import label_all


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> tuple[Path, str]:
    home = tmp_path_factory.mktemp("home")
    cfg = parse_config({"seeds": 6, "seed": 3, "strategy_params": {"generations": 40}})
    return home, run_campaign(cfg, home).campaign_id


def fresh_store(campaign, tmp_path: Path) -> tuple[Store, Path]:
    """A copy of the module's store, so that each test's study starts from nothing."""
    home, _ = campaign
    db = tmp_path / "labels.duckdb"
    db.write_bytes((home / "latentfuzz.duckdb").read_bytes())
    return Store(db), home


def test_a_study_holds_failing_results_seed_images_and_gold(campaign, tmp_path):
    store, home = fresh_store(campaign, tmp_path)
    cid = campaign[1]
    failing = store.query("SELECT * FROM seeds WHERE campaign_id = ? AND misclassified", [cid])
    assert len(failing) >= 2
    sid = create_study(store, home, StudyConfig(campaigns=[cid], seed_images=True, gold_rate=0.2))
    items = ls.items(store, sid)
    kinds = items["kind"].value_counts()
    assert kinds["result"] == kinds["seed"] == len(failing)
    assert kinds["gold"] == round(2 * len(failing) * 0.2 / 0.8)
    test = get_dataset("mnist").load("test")
    for g in items[items["kind"] == "gold"].itertuples():
        assert (home / g.image).exists()
        idx = int(g.external_id.split(":")[1])
        assert g.expected == int(test.labels[idx])  # gold answers are the dataset's labels
    res = items[items["kind"] == "result"].merge(failing, on="seed_idx")
    assert (res["expected"] == res["seed_label"]).all()
    assert (res["predicted"] == res["final_pred"]).all()
    assert (res["image"] == res["result_image"]).all()


def test_sampling_is_seeded_and_bad_configs_are_refused(campaign, tmp_path):
    store, home = fresh_store(campaign, tmp_path)
    cid = campaign[1]
    cfg = StudyConfig(campaigns=[cid], sample=2, gold_rate=0, seed=7)
    a, b = (ls.items(store, create_study(store, home, cfg)) for _ in range(2))
    assert len(a) == 2 and a["seed_idx"].tolist() == b["seed_idx"].tolist()
    with pytest.raises(ValueError, match="majority vote needs k >= 3"):
        StudyConfig(campaigns=[cid], rule="majority", k=2)
    with pytest.raises(ConfigError, match="no campaign 'nope'"):
        create_study(store, home, StudyConfig(campaigns=["nope"]))


def make_study(store: Store, n: int, k: int, expected: int = 3) -> str:
    items = pd.DataFrame(
        {
            "item_id": range(n),
            "kind": "result",
            "generator": "vae",
            "preset": "high",
            "expected": expected,
            "image": "x.png",
        }
    )
    ls.create_validity_study(
        store,
        {
            "id": "s",
            "dataset": "mnist",
            "source": "campaigns",
            "k": k,
            "rule": "icst",
            "seed": 0,
            "resamples": 200,
        },
        items,
    )
    return "s"


def test_serving_claims_answers_undo_and_no_double_answers():
    store = Store()
    sid = make_study(store, n=3, k=1)
    judging.join(store, sid, "ann")
    judging.join(store, sid, "bob")
    a = judging.next_item(store, sid, "ann")
    assert judging.next_item(store, sid, "ann") == a  # a reload shows the same image
    b = judging.next_item(store, sid, "bob")
    assert b != a  # k = 1: ann's claim holds the item's only slot
    t0 = datetime.now()
    assert judging.answer(store, sid, a, "ann", 3, t0)
    assert not judging.answer(store, sid, a, "ann", 5, t0)  # a double click changes nothing
    j = ls.judgements(store, sid)
    assert j[["item_id", "labeller", "answer", "position"]].values.tolist() == [[a, "ann", 3, 1]]
    assert j["seconds"].iloc[0] >= 0
    c = judging.next_item(store, sid, "ann")
    assert c not in (a, b)
    assert judging.progress(store, sid, "ann") == {"mine": 1, "done": 1, "wanted": 3, "items": 3}
    assert judging.undo(store, sid, "ann") == a
    assert ls.judgements(store, sid).empty
    assert judging.next_item(store, sid, "ann") == a  # the undone item comes back first
    assert judging.next_item(store, sid, "ann", skip=frozenset({a})) == c  # skip puts it last


def test_a_turn_answers_serves_and_reserves_the_next_item_in_one_transaction():
    """store.judging.turn, the Label page's one write per key: the item after the served one
    is reserved (claimed), so that another labeller is never served it at k = 1 and the
    page can show it before the next write; a reload still shows the served item first."""
    store = Store()
    sid = make_study(store, n=4, k=1)
    judging.join(store, sid, "ann")
    judging.join(store, sid, "bob")
    t = judging.turn(store, sid, "ann")
    a, a2 = t["item"], t["upcoming"]
    assert a2 is not None and a2 != a and t["image"] == t["upcoming_image"] == "x.png"
    assert judging.next_item(store, sid, "ann") == a  # a reload: the served item, not the reserve
    b = judging.turn(store, sid, "bob")
    assert {b["item"], b["upcoming"]}.isdisjoint({a, a2})  # ann's reserve holds its slot
    t = judging.turn(store, sid, "ann", answers=[(a, 3, datetime.now())])
    assert (t["item"], t["recorded"], t["progress"]["mine"]) == (a2, 1, 1)
    assert t["upcoming"] is None  # every other slot is bob's
    t = judging.turn(store, sid, "ann", undo=True)
    assert (t["item"], t["upcoming"], t["progress"]["mine"]) == (a, a2, 0)


def test_order_is_fixed_per_labeller_and_differs_between_labellers():
    store = Store()
    sid = make_study(store, n=40, k=2)
    seeds = [judging.join(store, sid, name) for name in ("ann", "bob")]
    assert judging.join(store, sid, "ann") == seeds[0]  # joining again resumes, same order
    orders = [judging.labeller_order(40, s) for s in seeds]
    assert sorted(orders[0]) == list(range(40))
    assert orders[0].tolist() != orders[1].tolist()
    assert judging.next_item(store, sid, "ann") == orders[0][0]


def test_two_processes_labelling_at_once_lose_nothing_and_never_double(tmp_path):
    db = str(tmp_path / "db.duckdb")
    make_study(Store(db), n=30, k=2)
    ctx = mp.get_context("spawn")
    with ctx.Pool(3) as pool:
        counts = pool.starmap(label_all, [(db, "ann", 3), (db, "bob", 3), (db, "cy", 4)])
    j = ls.judgements(Store(db), "s")
    assert sum(counts) == len(j) == 60  # every item has its k answers, no more
    assert not j.duplicated(["item_id", "labeller"]).any()
    assert (j.groupby("item_id").size() == 2).all()


def test_verdicts_follow_icst_and_adjudication_settles_the_queue():
    items = pd.DataFrame({"item_id": range(5), "kind": "result", "expected": 3})
    j = pd.DataFrame(
        {
            "item_id": [0, 0, 1, 1, 2, 2, 3, 3, 4],
            "answer": [3, 3, INVALID, INVALID, 3, 5, 3, INVALID, 3],
        }
    )
    v = verdicts(items, j, pd.DataFrame(), k=2, rule="icst")
    assert v["validity"].tolist() == [True, False, True, None, None]
    assert v["preservation"].tolist() == [True, None, None, None, None]
    assert v["complete"].tolist() == [True, True, True, True, False]
    assert undecided(v)["item_id"].tolist() == [2, 3]  # item 4 still waits for an answer
    adj = pd.DataFrame({"item_id": [2, 3], "answer": [5, INVALID]})
    v = verdicts(items, j, adj, k=2, rule="icst")
    assert v.loc[2, ["validity", "preservation"]].tolist() == [True, False]
    assert v.loc[3, ["validity", "preservation"]].tolist() == [False, False]
    assert undecided(v).empty


def test_group_table_counts_validity_over_all_and_preservation_over_valid():
    n = 10
    v = pd.DataFrame(
        {
            "item_id": range(n),
            "kind": "result",
            "complete": True,
            "generator": ["vae"] * 6 + ["gan"] * 4,
            "preset": "high",
            "validity": [True, True, True, True, False, None, True, False, False, False],
            "preservation": [True, True, False, None, None, None, True, None, None, None],
        }
    )
    t = group_table(v, ["generator"], seed=0, resamples=500).set_index("generator")
    assert t.loc["vae", ["n", "valid", "preserved"]].tolist() == [6, 4, 2]
    assert t.loc["vae", "valid_pct"] == pytest.approx(100 * 4 / 6)
    assert t.loc["vae", "preserved_pct"] == pytest.approx(50)
    assert t.loc["gan", ["valid_pct", "preserved_pct"]].tolist() == [25, 100]
    assert (
        t.loc["vae", "valid_ci_low"] <= t.loc["vae", "valid_pct"] <= t.loc["vae", "valid_ci_high"]
    )
    again = group_table(v, ["generator"], seed=0, resamples=500).set_index("generator")
    pd.testing.assert_frame_equal(t, again)  # the bootstrap is seeded


def test_statistics_of_a_labelled_study(campaign, tmp_path):
    store, home = fresh_store(campaign, tmp_path)
    cid = campaign[1]
    sid = create_study(store, home, StudyConfig(campaigns=[cid], gold_rate=0.25))
    items = ls.items(store, sid)
    for name in ("ann", "bob"):
        judging.join(store, sid, name)
        while (i := judging.next_item(store, sid, name)) is not None:
            it = items.set_index("item_id").loc[i]
            # ann always names the expected class; bob calls result images invalid
            value = int(it.expected) if name == "ann" or it.kind == "gold" else INVALID
            judging.answer(store, sid, i, name, value, datetime.now())
    s, v, j = load(store, sid)
    assert len(j) == 2 * len(items)
    assert v["validity"].isna().sum() == (items["kind"] == "result").sum()  # they disagree
    lt = labeller_table(j, items).set_index("labeller")
    assert lt["gold_accuracy_pct"].tolist() == [100.0, 100.0]
    ag = agreement_table(j, items)
    assert ag["items"] == len(items) and ag["cohen_kappa"] < 0.5
    raw, wide = raw_export(store, sid), wide_export(store, sid)
    assert len(raw) == len(j) and set(raw["answer_text"]) >= {"not a valid digit image"}
    assert len(wide) == len(items) and {"answer 1", "answer 2"} <= set(wide.columns)
    for i in undecided(v)["item_id"]:
        judging.adjudicate(store, sid, int(i), "rev", int(items.loc[i, "expected"]))
    cv = campaign_validity(store, [cid]).set_index("campaign")
    n_result = int((items["kind"] == "result").sum())
    assert cv.loc[cid, ["labelled", "valid", "preserved"]].tolist() == [n_result] * 3


def test_an_image_in_several_studies_counts_once_with_the_newest_verdict(campaign, tmp_path):
    store, home = fresh_store(campaign, tmp_path)
    cid = campaign[1]

    def labelled(answer) -> str:  # a study of the campaign's results, k=1, all answered
        sid = create_study(store, home, StudyConfig(campaigns=[cid], gold_rate=0, k=1))
        items = ls.items(store, sid).set_index("item_id")
        judging.join(store, sid, "ann")
        while (i := judging.next_item(store, sid, "ann")) is not None:
            judging.answer(store, sid, i, "ann", answer(items.loc[i]), datetime.now())
        return sid

    labelled(lambda it: INVALID)
    cv = campaign_validity(store, [cid]).set_index("campaign")
    n = int(cv.loc[cid, "labelled"])
    assert n > 0 and cv.loc[cid, "valid"] == 0
    labelled(lambda it: int(it.expected))  # the same images again, now valid
    cv = campaign_validity(store, [cid]).set_index("campaign")
    failing = int(sc.seeds(store, cid)["misclassified"].fillna(False).sum())
    # Each image once (it was each study's verdict once: 2n of n images), the newest says.
    assert cv.loc[cid, ["labelled", "valid", "preserved"]].tolist() == [n, n, n] and n <= failing


def test_unsure_is_a_decided_nothing():
    items = pd.DataFrame({"item_id": [0], "kind": "result", "expected": 1})
    j = pd.DataFrame({"item_id": [0, 0], "answer": [1, UNSURE]})
    v = verdicts(items, j, pd.DataFrame(), k=2, rule="icst")
    assert v.loc[0, "validity"] is None and v.loc[0, "preservation"] is None
    assert np.isnan(
        group_table(v.assign(generator="g"), ["generator"], 0, 100).loc[0, "preserved_pct"]
    )


def test_a_study_the_store_refuses_leaves_no_gold_images_behind(campaign, tmp_path, monkeypatch):
    store, home = fresh_store(campaign, tmp_path)
    import engine.labelling.validity as labelling

    def refuse(*a, **k):
        raise RuntimeError("the store said no")

    monkeypatch.setattr(labelling.label_store, "create_validity_study", refuse)
    before = set((home / "studies").glob("*"))  # the module's other studies share the home
    with pytest.raises(RuntimeError):
        create_study(store, home, StudyConfig(campaigns=[campaign[1]], gold_rate=0.3))
    assert set((home / "studies").glob("*")) == before


def test_a_seed_beyond_what_a_browser_holds_is_refused_in_the_config():
    # The store's BIGINT refused 1e20 with a traceback after the gold images were written.
    with pytest.raises(ValueError, match="less than or equal to 9007199254740991"):
        StudyConfig(campaigns=["c"], seed=2**53)
