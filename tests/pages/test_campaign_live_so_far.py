"""AppTest of a running campaign that searches on past a seed's first failure (issue 36,
point 1, "Stop at failure" off): its generations rows show the seeds whose best already
fails, and the live view counts and shows them "so far" as soon as the writer flushes
those rows; the tiles, the progress line and the gallery read the same seed rows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from store import Store
from store import campaigns as sc
from store.liveness import CampaignLock
from tests.helpers import page_opener, record_deferred

OUTCOME = (
    "misclassified = NULL, iterations = NULL, evaluations = NULL, final_pred = NULL, "
    "final_fitness = NULL, result_image = NULL, improvements_image = NULL"
)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> tuple[Path, str]:
    """A finished GA campaign with stop_at_failure off: 6 seeds, 8 generations."""
    home = tmp_path_factory.mktemp("home")
    cfg = parse_config(
        {"seeds": 6, "seed": 3, "strategy_params": {"generations": 8, "stop_at_failure": False}}
    )
    return home, run_campaign(cfg, home).campaign_id


@pytest.fixture
def running(finished, tmp_path: Path):
    """(home, cid, later, first): the campaign as its live view saw it before generation
    `cut + 1` was flushed: running (its lock held), every viable seed searching, no row
    past `cut`. `later`: the rows its writer flushes next; `first`: seed -> the generation
    its best first failed (the criterion's rule, misclassified, on the rows)."""
    home = tmp_path / "home"
    shutil.copytree(finished[0], home)
    cid = finished[1]
    store = Store(home / "latentfuzz.duckdb")
    seeds = sc.seeds(store, cid).set_index("seed_idx")
    gens = sc.generations(store, cid)
    fails = gens[gens["best_pred"] != gens["seed_idx"].map(seeds["seed_label"])]
    first = fails.groupby("seed_idx")["generation"].min().to_dict()
    cut = min(first.values()) - 1
    assert first and cut >= 1, gens  # the fixture needs a failure after generation 1
    later = gens[gens["generation"] > cut].assign(campaign_id=cid)
    with store.write() as con:
        con.execute(
            "UPDATE campaigns SET status = 'running', finished_at = NULL WHERE id = ?", [cid]
        )
        con.execute(
            f"UPDATE seeds SET status = 'searching', {OUTCOME} WHERE campaign_id = ? AND viable",
            [cid],
        )
        con.execute("DELETE FROM generations WHERE campaign_id = ? AND generation > ?", [cid, cut])
    lock = CampaignLock(home, cid).acquire()  # its process, still searching
    try:
        yield home, cid, later, first
    finally:
        lock.release()


def flush(home: Path, rows: pd.DataFrame) -> None:
    """As the campaign's writer appends a batch of generations rows."""
    with Store(home / "latentfuzz.duckdb").write() as con:
        con.register("batch", rows)
        con.execute("INSERT INTO generations BY NAME SELECT * FROM batch")


def tile(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def cards(at) -> list[str]:
    return [c.value for c in at.caption if c.value.startswith("seed ")]


def test_seeds_whose_best_already_fails_are_counted_and_shown_so_far(
    running, finished, monkeypatch
):
    home, cid, later, first = running
    store = Store(home / "latentfuzz.duckdb")
    viable = int(sc.seeds(store, cid)["viable"].sum())
    # The engine flushes strips on a clock of its own: one failing seed's strip holds
    # none of its frames yet (its card says so), another's lacks its best (its latest
    # failing frame stands in, said so).
    imp = later[later["image"].notna() & later["seed_idx"].isin(list(first))]
    frames = imp.groupby("seed_idx")["image_frame"].agg(["min", "max"])
    lagging = frames.index[frames["max"] > frames["min"]][0]
    missing = next(s for s in first if s != lagging)
    (home / imp.loc[imp["seed_idx"] == missing, "image"].iloc[0]).unlink()
    strip = home / imp.loc[imp["seed_idx"] == lagging, "image"].iloc[0]
    with Image.open(strip) as im:
        im.load()
        side = im.height  # square frames
        im.crop((0, 0, side * int(frames.at[lagging, "max"]), side)).save(strip)
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    assert tile(at, "misclassified so far") == "0 (0%)"
    assert not any("so far" in c for c in cards(at))
    flush(home, later)  # the generations in which their best fails
    made = record_deferred(monkeypatch)
    at.run()
    assert not at.exception, at.exception
    n = len(first)
    # Before: "misclassified 0 (0%)" and only "(searching)" cards until the campaign ended.
    assert tile(at, "misclassified so far") == f"{n} ({100 * n / viable:.0f}%)"
    mean = sum(first.values()) / n
    assert tile(at, "found in generation") == f"{mean:.1f}"  # the rows' first failures
    count_line = next(c.value for c in at.caption if "searching" in c.value)
    assert f"{n} misclassified so far" in count_line
    assert f"{viable - n} searching" in count_line
    shown = {c.split(":")[0]: c for c in cards(at)}
    assert sorted(shown) == sorted(f"seed {s}" for s in first)  # searching ones hidden
    for s, g in first.items():
        assert f"since generation {g}, still searching (misclassified so far)" in shown[f"seed {s}"]
    # Each card with its best image so far, or a word that it is not written yet.
    # (Seed and image as one pair: "seed · best so far".)
    captions = [i.proto.imgs[0].caption for i in at.get("image")]
    assert captions.count("seed · failing so far (the best not written yet)") == 1
    assert captions.count("seed · failing so far: no image of it written yet") == 1
    # The strips catch up: the best images.
    for rel in imp.loc[imp["seed_idx"].isin([lagging, missing]), "image"].unique():
        shutil.copy(finished[0] / rel, home / rel)
    at.run()
    captions = [i.proto.imgs[0].caption for i in at.get("image")]
    assert captions.count("seed · best so far") == n
    # The CSV says what the gallery says ("searching" before), in the stored columns.
    import io

    csv = pd.read_csv(io.BytesIO(made[f"{cid}-seeds.csv"]()))
    assert set(sc.seeds(store, cid).columns) <= set(csv.columns)
    assert not [c for c in csv.columns if c.startswith("so_far")]  # the gallery's own
    marked = csv[csv["status"] == "misclassified so far"].set_index("seed_idx")
    assert sorted(marked.index) == sorted(first)
    assert all(marked.at[s, "iterations"] == g for s, g in first.items())
    # The zip's seeds.csv says the same; their seed images under that status.
    import zipfile

    z = zipfile.ZipFile(io.BytesIO(made[f"{cid}.zip"]()))
    inside = pd.read_csv(z.open("seeds.csv")).set_index("seed_idx")
    assert (inside.loc[sorted(first), "status"] == "misclassified so far").all()
    assert all(
        p.startswith("misclassified_so_far/") for p in inside.loc[sorted(first), "seed_image"]
    )
    # The progress line counts none of them done: they search on.
    bar = at.get("progress")[0].proto.text
    assert f"0 of {viable} " in bar


def test_the_tiles_and_the_gallery_count_the_same_rows(running, monkeypatch):
    """The store's summary read apart from the gallery's rows lagged them by a refresh:
    here it lags for good, and the tiles must not follow it."""
    home, cid, later, first = running
    flush(home, later)
    stale = sc.summary(Store(home / "latentfuzz.duckdb"), cid)
    store = Store(home / "latentfuzz.duckdb")
    with store.write() as con:  # the writer finishes one failing seed meanwhile
        con.execute(
            "UPDATE seeds SET status = 'misclassified', misclassified = true, iterations = ?, "
            "final_pred = seed_pred WHERE campaign_id = ? AND seed_idx = ?",
            [first[min(first)], cid, min(first)],
        )
    monkeypatch.setattr(sc, "summary", lambda *a, **k: stale)
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    count_line = next(c.value for c in at.caption if "searching" in c.value)
    n = len(first)
    assert count_line.startswith(f"1 misclassified · {n - 1} misclassified so far")
    assert tile(at, "misclassified so far").startswith(f"{n} (")
    assert "1 of " in at.get("progress")[0].proto.text


def test_the_zip_while_running_holds_every_image_so_far_with_the_csvs_columns(
    running, finished, monkeypatch
):
    """The walk's zip held seeds.csv alone (857 bytes), its seed-image cells blank and
    without the CSV's generations column."""
    import io
    import zipfile

    home, cid, later, first = running
    done = min(first)  # one seed finished meanwhile: its result image is written
    result = sc.seeds(Store(finished[0] / "latentfuzz.duckdb"), cid).set_index("seed_idx")
    with Store(home / "latentfuzz.duckdb").write() as con:
        con.execute(
            "UPDATE seeds SET status = 'misclassified', misclassified = true, iterations = ?, "
            "final_pred = ?, result_image = ? WHERE campaign_id = ? AND seed_idx = ?",
            [
                first[done],
                int(result.at[done, "final_pred"]),
                result.at[done, "result_image"],
                cid,
                done,
            ],
        )
    made = record_deferred(monkeypatch)
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    csv = pd.read_csv(io.BytesIO(made[f"{cid}-seeds.csv"]()))
    z = zipfile.ZipFile(io.BytesIO(made[f"{cid}.zip"]()))
    table = pd.read_csv(z.open("seeds.csv"))
    assert list(table.columns) == list(csv.columns) and "generations" in table.columns
    names = set(z.namelist())
    # Every seed's image (each seed image is written at the campaign's start), and the
    # finished seed's result; the CSV names each file the zip holds.
    assert table["seed_image"].notna().all() and set(table["seed_image"]) <= names
    assert sum(n.endswith("_seed.png") for n in names) == len(table)
    results = table["result_image"].dropna().tolist()
    assert len(results) == 1 and results[0] in names
    assert results[0].startswith(f"misclassified/seed{done:04d}_")
    searching = table[table["status"] == "searching"]
    assert all(p.startswith("searching/") for p in searching["seed_image"])
