"""Study statistics of campaigns of several strategies: grouped by strategy as well as
generator and perturbation, with "—" where a strategy has no perturbation preset."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.cli import labels as cli_labels
from engine.cli.main import app
from engine.labelling.statistics import group_table, load, report, with_strategy
from engine.labelling.validity import StudyConfig, create_study
from store import Store, judging
from store import labels as ls


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> tuple[Path, str]:
    """A labelled study of a SINVAD and an Argus (interpolate) campaign on the same VAE:
    neither strategy has a perturbation preset, so generator and preset alone merge them."""
    home = tmp_path_factory.mktemp("home")
    ids = [
        run_campaign(parse_config({"seeds": 2, "seed": 1, **extra}), home).campaign_id
        for extra in (
            {"strategy": "sinvad", "strategy_params": {"generations": 10}},
            {"strategy": "interpolate", "strategy_params": {"k": 2, "lambda_steps": 6}},
        )
    ]
    store = Store(home / "latentfuzz.duckdb")
    sid = create_study(store, home, StudyConfig(campaigns=ids, gold_rate=0.0, k=1))
    items = ls.items(store, sid).set_index("item_id")
    judging.join(store, sid, "ann")
    while (i := judging.next_item(store, sid, "ann")) is not None:
        judging.answer(store, sid, i, "ann", int(items.loc[i, "expected"]), datetime.now())
    return home, sid


def test_a_study_of_two_strategies_gives_a_row_per_strategy(mixed):
    """It gave one row `mnist-vae / None` for both campaigns' images."""
    home, sid = mixed
    store = Store(home / "latentfuzz.duckdb")
    t = report(store, sid)
    assert list(t.columns[:3]) == ["strategy", "generator", "preset"]
    assert sorted(t["strategy"]) == ["interpolate", "sinvad"]
    assert t["n"].tolist() == [2, 2]
    # The page's table: the same grouping, from the same frame.
    s, v, _ = load(store, sid)
    page = group_table(with_strategy(store, v), ["generator", "preset"], 0, 50)
    assert sorted(page["strategy"]) == ["interpolate", "sinvad"]


def test_a_study_of_one_strategy_keeps_its_columns(mixed):
    """One strategy: no strategy column (as a study of result images only has no kind
    column), so the tables of every study of one strategy read as before."""
    home, sid = mixed
    store = Store(home / "latentfuzz.duckdb")
    s, v, _ = load(store, sid)
    one = with_strategy(store, v[v["campaign_id"] == v["campaign_id"].iloc[0]])
    assert "strategy" not in group_table(one, ["generator", "preset"], 0, 50).columns


def test_labels_report_prints_a_row_per_strategy_and_no_nan(mixed, monkeypatch):
    home, sid = mixed
    monkeypatch.setattr(cli_labels.console, "width", 200)  # a wide terminal: no cut cells
    out = CliRunner().invoke(app, ["labels", "report", sid, "--home", str(home)])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert "strategy" in next(line for line in lines if "perturbation" in line)
    rows = [line for line in lines if "mnist-vae" in line]
    assert len(rows) == 2 and "sinvad" in rows[0] + rows[1] and "interpolate" in rows[0] + rows[1]
    assert all("—" in r for r in rows), rows  # no perturbation preset: a dash
    assert "nan" not in out.output and "None" not in out.output, out.output


def test_the_studies_page_shows_a_row_per_strategy_and_no_none(mixed, monkeypatch):
    """The Validity studies page's statistics table: the same grouping as `labels report`,
    a dash where a strategy has no perturbation preset."""
    from tests.helpers import markdown_tables, page_opener

    home, sid = mixed
    at = page_opener(home, monkeypatch)("studies.py", study=sid)
    assert not at.exception, at.exception
    assert "By strategy, generator and perturbation" in [h.value for h in at.subheader]
    table = markdown_tables(at)[0]
    assert sorted(table["strategy"]) == ["interpolate", "sinvad"]
    assert table["perturbation"].tolist() == ["—", "—"]
    assert not table.astype(str).isin(["None", "nan"]).any().any(), table
