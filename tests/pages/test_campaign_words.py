"""AppTest of the Campaign page's words (issue 36, points 3 and 6): targets named in the
counts and the cards alike, NSGA-II's search told in generations and evaluations, filter
scores with their threshold and verdict, and a per-seed table in people's words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from store import Store
from store import campaigns as sc
from store import differential as sd
from tests.helpers import page_opener


@pytest.fixture(scope="module")
def targeted(tmp_path_factory) -> tuple[Path, str]:
    """A class-escape campaign in which 8 searches reach their target and 1 does not."""
    home = tmp_path_factory.mktemp("home")
    cfg = {
        "escape_per_pair": 1,
        "target_class": 2,
        "seed": 1,
        "strategy_params": {"generations": 7},
    }
    return home, run_campaign(parse_config(cfg), home).campaign_id


def cards(at) -> list[str]:
    return [c.value for c in at.caption if c.value.startswith("seed ")]


def test_targeted_counts_and_cards_name_the_target_in_the_same_words(targeted, monkeypatch):
    home, cid = targeted
    seeds = sc.seeds(Store(home / "latentfuzz.duckdb"), cid)
    counts = seeds["status"].value_counts()
    assert counts.get("misclassified", 0) and counts.get("survived", 0)  # both outcomes
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    count_line = next(c.value for c in at.caption if "reached target" in c.value)
    assert f"{counts['misclassified']} reached target" in count_line
    assert f"{counts['survived']} did not reach target" in count_line
    assert "survived" not in count_line and "misclassified" not in count_line
    shown = cards(at)
    assert shown and not [c for c in shown if "(misclassified)" in c or "(survived)" in c]
    by_seed = seeds.set_index("seed_idx")
    for c in shown:
        r = by_seed.loc[int(c.split(":")[0].removeprefix("seed "))]
        if r.status == "misclassified":
            assert f"reached target **{int(r.target)}** after " in c
        elif r.status == "survived":
            assert (
                f"did not reach target **{int(r.target)}** (predicted **{int(r.final_pred)}**)" in c
            )
    assert [c for c in shown if "did not reach target" in c]  # all 9 on one page
    # The escape panel's table too.
    pairs = next(e for e in at.expander if e.label.startswith("Per pair"))
    (table,) = [d.value for d in pairs.dataframe]
    assert "reached target" in table.columns and "successes" not in table.columns
    assert table["reached target"].sum() == counts["misclassified"]
    # The status filter offers the same words.
    show = next(m for m in at.multiselect if m.label == "Show")
    assert show.format_func("survived") == "did not reach target"
    assert show.format_func("misclassified") == "reached target"


def test_nsga2_cards_say_generations_and_evaluations_not_iterations(diffed_app, diffed):
    home, cid = diffed
    seeds = sc.seeds(Store(home / "latentfuzz.duckdb"), cid)
    at = diffed_app("campaign.py", id=cid)
    assert not at.exception, at.exception
    shown = cards(at)
    assert shown
    for c in shown:
        assert "iteration" not in c  # "after 1 iteration" after a 4-generation search
        r = seeds.set_index("seed_idx").loc[int(c.split(":")[0].removeprefix("seed "))]
        assert f"searched 4 generations, {int(r.evaluations):,} evaluations" in c
        if r.status == "misclassified":
            assert f"first in generation {int(r.iterations)};" in c
    box = [n.label for n in at.number_input]
    assert "Found by generation" in box and "At most iterations" not in box
    tiles = [m.label for m in at.metric]  # the status bar's, too
    assert tiles and not [t for t in tiles if "iteration" in t], tiles
    at = diffed_app("campaign.py", id=cid, tab="Seed detail")
    detail = next(m.value for m in at.markdown if m.value.startswith("expected"))
    assert "iterations" not in detail and "generations" in detail, detail


def test_filter_scores_show_their_threshold_and_verdict(diffed_app, diffed):
    home, cid = diffed
    store = Store(home / "latentfuzz.duckdb")
    threshold = float(
        sd.validity(store, cid).query("validator == 'ssim-nearest'")["threshold"].iloc[0]
    )
    at = diffed_app("campaign.py", id=cid)
    gallery = next(e for e in at.expander if e.label.startswith("Triggering inputs"))
    captions = [c.value for c in gallery.caption]
    verdicts = [
        re.search(r"ssim-nearest (\S+) (\S) (\S+) (✓ valid|✗ invalid)", c) for c in captions
    ]
    assert captions and all(verdicts), captions
    for v in verdicts:
        score, sign, shown, word = v.groups()
        assert float(shown) == round(threshold, 2)
        assert (sign, word) in (("≥", "✓ valid"), ("<", "✗ invalid"))
        assert (float(score) >= float(shown)) == (word == "✓ valid") or abs(
            float(score) - threshold
        ) < 0.01  # rounded to two places at the threshold


def test_the_per_seed_table_has_no_internal_words_nor_none_cells(seeded, stopped, monkeypatch):
    for home, cid in (seeded, stopped):  # finished, and stopped with seeds lacking outcomes
        at = page_opener(home, monkeypatch)("campaign.py", id=cid, tab="Per-seed table")
        assert not at.exception, at.exception
        (table,) = [d.value for d in at.dataframe]
        assert not [c for c in table.columns if "_" in c], table.columns
        assert {"seed", "expected", "outcome", "iterations", "predicted"} <= set(table.columns)
        assert not table.isna().any().any()  # blank, not "None"
        assert not table.astype(str).isin(["None", "nan", "<NA>"]).any().any()


@pytest.fixture(scope="module")
def one_target(tmp_path_factory) -> tuple[Path, str]:
    """A targeted campaign towards class 8, whose first seed is of class 8 itself."""
    home = tmp_path_factory.mktemp("home")
    cfg = {
        "fitness": "targeted",
        "target": 8,
        "seeds": 8,
        "seed": 1,
        "strategy_params": {"generations": 15},
    }
    return home, run_campaign(parse_config(cfg), home).campaign_id


def header(at) -> str:
    return next(c.value for c in at.caption if " · id " in c.value)


def test_a_targeted_campaign_names_its_target_class_and_counts_seeds(one_target, monkeypatch):
    """Its tile read "reached target 2 (33%)": 2 seeds, or class 2? Nothing named class 8."""
    home, cid = one_target
    summary = sc.summary(Store(home / "latentfuzz.duckdb"), cid)
    n, viable = summary["misclassified"], summary["viable"]
    assert 0 < n < viable  # (so that "n of viable" differs from the old count alone)
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    assert " · target class 8 · " in header(at), header(at)
    tile = next(m for m in at.metric if "target" in m.label)
    assert tile.label == "reached their target"
    assert (tile.value, tile.delta) == (f"{n} of {viable}", f"{100 * n / viable:.0f}%")
    assert f"{n} of the {viable} viable seeds" in tile.help


def test_an_escape_campaign_says_each_seed_has_its_own_target(targeted, monkeypatch):
    home, cid = targeted
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    assert " · class escape from class 2: each seed's own target · " in header(at), header(at)
    assert "reached their target" in [m.label for m in at.metric]


def test_the_escape_matrix_leaves_the_diagonal_blank(one_target, monkeypatch):
    """Seeds of class 8 searched towards class 8 made a cell 8→8 = 0.00, although the
    caption says the diagonal is left out."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    home, cid = one_target
    pairs = sc.escape_matrix(Store(home / "latentfuzz.duckdb"), cid)
    assert ((pairs["source"] == 8) & (pairs["target"] == 8)).any()  # the cell to leave out
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    chart = next(c for c in at.get("vega_lite_chart") if "escape success rate" in c.proto.spec)
    (cells,) = [convert_arrow_bytes_to_pandas_df(d.data.data) for d in chart.proto.datasets]
    assert len(cells) and (cells["source_name"] != cells["target_name"]).all(), cells
    assert set(cells["source_name"]) == {"0", "2", "3", "4", "5", "9"}
