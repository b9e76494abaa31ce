"""AppTest of Compare's automatic validity and realism (pages/compare.py): "% valid (auto,
calibrated on STUDY)" beside people's % validity, one column per validity filter (a
chooser where there are many), and FID and KID per campaign in classifier features, blank
where a campaign has none."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.cli.main import app as cli
from engine.labelling.study_calibration import calibrated_threshold, score_study
from engine.labelling.validity import StudyConfig, create_study
from store import Store
from store import differential as sd
from store import metrics as sm
from tests.engine.labelling.test_study_calibration import simulate
from tests.helpers import page_opener


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> tuple[Path, str, str, str]:
    """(home, a, b, study): GAN campaigns `a` (4 seeds) and `b` (2 seeds, another budget:
    its own block); people judged a's failing images (simulated, 2 of 4 valid), a was
    validated at ssim-nearest's threshold fitted on that study and b at a fixed 0.3; b's
    realism is gone, as an older campaign's is."""
    home = tmp_path_factory.mktemp("home")
    base = {"generator": "gan", "seed": 1}
    strong = {"perturbation": "strong"}
    a = run_campaign(
        parse_config(
            {**base, "name": "a", "seeds": 4, "strategy_params": {**strong, "generations": 20}}
        ),
        home,
    ).campaign_id
    b = run_campaign(
        parse_config(
            {**base, "name": "b", "seeds": 2, "strategy_params": {**strong, "generations": 10}}
        ),
        home,
    ).campaign_id
    store = Store(home / "latentfuzz.duckdb")
    sid = create_study(store, home, StudyConfig(campaigns=[a], gold_rate=0.2, k=2, seed=3))
    simulate(store, sid, seed=7)
    score_study(store, home, sid, ["ssim-nearest"])
    args = ["validate", a, "--validator", f"ssim-nearest=calibrated:{sid}", "--home", str(home)]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    # b at a fixed threshold, written as `validate b --validator ssim-nearest=0.3` would
    # (a second validate cost the suite seconds): its result images, half of them valid.
    results = store.query(
        "SELECT seed_idx FROM seeds WHERE campaign_id = ? AND result_image IS NOT NULL "
        "ORDER BY seed_idx",
        [b],
    )["seed_idx"].astype(int)
    scores = [0.1 + 0.4 * (i % 2) for i in range(len(results))]
    rows = pd.DataFrame(
        {
            "kind": "result",
            "ref": results,
            "validator": "ssim-nearest",
            "score": scores,
            "threshold": 0.3,
            "valid": [x >= 0.3 for x in scores],
        }
    )
    sd.write_validity(store, b, rows)
    with store.write() as con:
        con.execute("UPDATE campaign_metrics SET realism = NULL WHERE campaign_id = ?", [b])
    return home, a, b, sid


def cells(line: str) -> list[str]:
    """A markdown table line's cells as people read them (md_text's escapes undone)."""
    return [re.sub(r"\\(.)", r"\1", c.strip()) for c in line.strip("|").split("|")]


def row_of(table: str, name: str) -> list[str]:
    return cells(next(x for x in table.splitlines() if x.startswith(f"| {name} |")))


def header_of(table: str, name: str) -> list[str]:
    """The header of the block that holds campaign `name`'s row."""
    lines = table.splitlines()
    i = next(i for i, x in enumerate(lines) if x.startswith(f"| {name} |"))
    return cells(next(x for x in reversed(lines[:i]) if x.startswith("| campaign |")))


def test_compare_shows_the_calibrated_validity_beside_peoples(judged, monkeypatch):
    home, a, b, sid = judged
    store = Store(home / "latentfuzz.duckdb")
    at = page_opener(home, monkeypatch)("compare.py", id=[a, b])
    assert not at.exception, at.exception
    table = at.markdown[0].value
    # a: people's 2 of 4 valid, then ssim-nearest's % valid at the fitted threshold.
    head, row = header_of(table, "a"), row_of(table, "a")
    human = head.index("% validity (#)")
    assert head[human + 1] == f"ssim-nearest: % valid (auto, calibrated on {sid}) (#)"
    assert row[human] == "50 (2)"
    fitted = calibrated_threshold(store, sid, "ssim-nearest")
    scores = store.query(
        "SELECT score FROM validity WHERE campaign_id = ? AND validator = 'ssim-nearest' "
        "AND kind = 'result'",
        [a],
    )["score"]
    valid = int((scores >= fitted).sum())
    assert row[human + 1] == f"{100 * valid / len(scores):.0f} ({valid})"
    # b: no person judged it; its filter at a fixed threshold.
    head, row = header_of(table, "b"), row_of(table, "b")
    human = head.index("% validity (#)")
    assert head[human + 1] == "ssim-nearest: % valid (auto, threshold 0.3) (#)"
    assert row[human] == "–" and re.fullmatch(r"\d+ \(\d+\)", row[human + 1])
    caption = at.caption[0].value
    assert "% valid (auto)" in caption and "NAME=calibrated:STUDY" in caption
    # The download carries the figures too.
    assert not re.search(r"\bNone\b|\bnan\b", table)


def test_compare_shows_realism_per_campaign_and_blanks_where_none(judged, monkeypatch):
    home, a, b, _ = judged
    store = Store(home / "latentfuzz.duckdb")
    at = page_opener(home, monkeypatch)("compare.py", id=[a, b])
    assert not at.exception, at.exception
    realism = next(m.value for m in at.markdown if "FID (classifier features" in m.value)
    head = cells(realism.splitlines()[0])
    assert head[2:4] == [
        "FID (classifier features, not Inception)",
        "KID (classifier features, not Inception)",
    ]
    measured = sm.realism_table(store, [a]).iloc[0]
    ra, rb = row_of(realism, "a"), row_of(realism, "b")
    assert ra[1] == "mnist-gan" and ra[2] == f"{measured['fid']:,.1f}"
    assert ra[3] == f"{measured['kid']:,.2f}" and ra[5] == str(measured["images"])
    assert rb[1] == "mnist-gan" and set(rb[2:]) == {"–"}
    assert not re.search(r"\bNone\b|\bnan\b", realism)
    caption = next(c.value for c in at.caption if "not Inception FIDs" in c.value)
    assert "penultimate of mnist-convnet" in caption
    assert "`latentfuzz validate ID` computes it" in caption


def test_many_validity_filters_are_chosen_from_a_list_calibrated_first(judged, monkeypatch):
    home, a, b, sid = judged
    store = Store(home / "latentfuzz.duckdb")
    names = ["fake-a", "fake-b", "fake-c"]
    rows = store.query(
        "SELECT kind, ref, score, threshold, valid FROM validity WHERE campaign_id = ? "
        "AND validator = 'ssim-nearest'",
        [b],
    )
    fakes = pd.concat([rows.assign(validator=n) for n in names], ignore_index=True)
    sd.write_validity(store, b, fakes)
    try:
        at = page_opener(home, monkeypatch)("compare.py", id=[a, b])
        assert not at.exception, at.exception
        chooser = next(m for m in at.multiselect if m.label.startswith("Validity filters"))
        assert chooser.options == ["fake-a", "fake-b", "fake-c", "ssim-nearest"]
        assert chooser.value == ["ssim-nearest", "fake-a", "fake-b"]
        head = header_of(at.markdown[0].value, "b")
        assert sum("% valid (auto" in h for h in head) == 3
        chooser.set_value(["fake-c"]).run()
        head = header_of(at.markdown[0].value, "b")
        assert [h for h in head if "% valid (auto" in h] == [
            "fake-c: % valid (auto, threshold 0.3) (#)"
        ]
        # a has no fake-c score: a blank, not "None".
        head, row = header_of(at.markdown[0].value, "a"), row_of(at.markdown[0].value, "a")
        assert row[head.index("fake-c: % valid (auto) (#)")] == "–"
    finally:
        with store.write() as con:
            con.execute(
                "DELETE FROM validity WHERE campaign_id = ? AND validator LIKE 'fake-%'", [b]
            )
