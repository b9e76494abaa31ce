"""AppTest of a running campaign's Campaign page (issue 36, point 1): the gallery of the
seeds written so far, with the finished view's cards, filters and sort, new cards
appearing as result rows are written between two refreshes, and downloads at any time
that say they hold what was written so far."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from store import Store
from store import campaigns as sc
from store.liveness import CampaignLock
from tests.helpers import page_opener

OUTCOME = "status, misclassified, iterations, evaluations, final_pred, final_fitness, result_image"


@pytest.fixture
def running(tmp_path: Path):
    """(home, cid, rows): a campaign shown as running (its process's lock held) whose
    viable seeds past the first two are still searching; `rows` their outcomes, to write."""
    home = tmp_path / "home"
    cfg = parse_config({"seeds": 8, "seed": 2, "strategy_params": {"generations": 10}})
    cid = run_campaign(cfg, home).campaign_id
    store = Store(home / "latentfuzz.duckdb")
    seeds = sc.seeds(store, cid)
    viable = seeds[seeds["viable"]]
    assert len(viable) >= 4, seeds  # the fixture needs two shown and two to come
    with store.write() as con:
        con.execute(
            "UPDATE campaigns SET status = 'running', finished_at = NULL WHERE id = ?", [cid]
        )
        # Still searching: their rows stop before the generation that ended their search
        # (a seed whose best fails is finished in that generation's flush, or else counts
        # as failed so far).
        con.execute(
            "DELETE FROM generations g USING seeds s WHERE g.campaign_id = ? "
            "AND s.campaign_id = g.campaign_id AND s.seed_idx = g.seed_idx "
            "AND s.seed_idx IN ? AND g.generation >= s.iterations",
            [cid, viable["seed_idx"].iloc[2:].tolist()],
        )
        con.execute(
            "UPDATE seeds SET status = 'searching', misclassified = NULL, iterations = NULL, "
            "evaluations = NULL, final_pred = NULL, final_fitness = NULL, result_image = NULL "
            "WHERE campaign_id = ? AND seed_idx IN ?",
            [cid, viable["seed_idx"].iloc[2:].tolist()],
        )
        # The first written seed and the third (written later) predicted 7, the fourth not.
        con.execute(
            "UPDATE seeds SET final_pred = 7 WHERE campaign_id = ? AND seed_idx = ?",
            [cid, int(viable["seed_idx"].iloc[0])],
        )
        con.execute(
            "UPDATE seeds SET final_pred = 1 WHERE campaign_id = ? AND seed_idx = ?",
            [cid, int(viable["seed_idx"].iloc[1])],
        )
    lock = CampaignLock(home, cid).acquire()  # its process, still searching
    try:
        yield home, cid, viable
    finally:
        lock.release()


def cards(at) -> list[str]:
    return [c.value for c in at.caption if c.value.startswith("seed ")]


def write_outcome(home: Path, cid: str, row, final_pred: int) -> None:
    """As the campaign's writer flushes a finished seed's row."""
    with Store(home / "latentfuzz.duckdb").write() as con:
        con.execute(
            f"UPDATE seeds SET ({OUTCOME}) = (?, ?, ?, ?, ?, ?, ?) "
            "WHERE campaign_id = ? AND seed_idx = ?",
            [
                row.status,
                bool(row.misclassified),
                int(row.iterations),
                int(row.evaluations),
                final_pred,
                float(row.final_fitness),
                row.result_image,
                cid,
                int(row.seed_idx),
            ],
        )


def test_a_running_campaign_shows_its_failures_so_far_and_new_ones_at_the_next_refresh(
    running, monkeypatch
):
    home, cid, viable = running
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    assert any(m.value == "**Status:** running" for m in at.markdown)
    assert any(h.value == "Seeds so far" for h in at.subheader)
    first, second, third, fourth = (int(i) for i in viable["seed_idx"].iloc[:4])
    # The seeds written so far, with the finished view's cards; searching ones not shown.
    shown = cards(at)
    assert any(c.startswith(f"seed {first}: expected") for c in shown)
    assert any(c.startswith(f"seed {second}: expected") for c in shown)
    assert not any(c.startswith(f"seed {third}:") for c in shown)
    count_line = next(c.value for c in at.caption if "searching" in c.value)
    assert f"{len(viable) - 2} searching" in count_line
    # Downloads at any time, saying they hold what was written so far.
    labels = [b.proto.label for b in at.get("download_button")]
    # Two searches done; a seed never searched (non-viable) is not counted as done.
    of = f"{len(viable)} viable seeds done" if len(viable) < 8 else "8 seeds"
    assert f"Download CSV (so far: 2 of {of})" in labels
    assert f"Download zip (so far: 2 of {of})" in labels
    # Filter by predicted class: the first seed only.
    next(m for m in at.multiselect if m.label == "Predicted class").set_value(["7"]).run()
    assert [c.split(":")[0] for c in cards(at)] == [f"seed {first}"]
    # The writer flushes two more seeds' rows; the next refresh shows the one the filter
    # keeps, and the filter stays.
    write_outcome(home, cid, viable.iloc[2], 7)
    write_outcome(home, cid, viable.iloc[3], 1)
    at.run()
    assert not at.exception, at.exception
    assert [c.split(":")[0] for c in cards(at)] == [f"seed {first}", f"seed {third}"]
    assert all("predicted **7**" in c for c in cards(at))
    labels = [b.proto.label for b in at.get("download_button")]
    assert f"Download CSV (so far: 4 of {of})" in labels
    # Sorted by iterations, most first: the order follows the stored iterations.
    at.selectbox(key="url:gallery_sort").set_value("-iterations").run()
    its = viable.set_index("seed_idx")["iterations"]
    want = sorted([first, third], key=lambda s: (-its[s], s))
    assert [c.split(":")[0] for c in cards(at)] == [f"seed {s}" for s in want]
    assert not any(c.startswith(f"seed {fourth}:") for c in cards(at))  # predicted 1


def test_the_zip_of_a_running_campaign_holds_the_seeds_written_so_far(running, monkeypatch):
    import io
    import zipfile

    home, cid, viable = running
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    for b in at.get("download_button"):  # made on the click, not at every refresh
        assert b.proto.deferred_file_id, b.proto.label
    from engine.io.export import zip_bytes

    names = zipfile.ZipFile(
        io.BytesIO(zip_bytes(Store(home / "latentfuzz.duckdb"), home, cid))
    ).namelist()
    assert any(n.startswith(("misclassified/", "survived/")) for n in names)
    assert sum(n.endswith("_result.png") for n in names) == 2  # the two seeds written
