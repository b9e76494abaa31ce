"""A store that says it is damaged is not written to: `run`, `resume`, `import` and a grid
refuse before writing, in one line with doctor's advice, and work again once `doctor --fix`
has repaired it. The damage is made as doctor's own tests make it: a second copy of
`individuals` rows, which no index refuses (store/schema.py UNINDEXED)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.io import doctor
from engine.studies.grid import run_grid
from engine.studies.spec import GridSpec
from store import StoreError, maintenance
from store import campaigns as sc
from tests.helpers import db
from tests.reliability.conftest import cli, one_line_error

SMALL = {
    "seeds": 2,
    "seed": 3,
    "strategy_params": {"generations": 3, "population": 6, "best_left": 2},
}
TINY = ["--seeds", "2", "--generations", "3", "--population", "6", "--best-left", "2"]
DAMAGED = "is damaged (1 problem: individuals: 2 keys appear twice)"
ADVICE = "run `latentfuzz doctor` to see them and `latentfuzz doctor --fix` to repair"


def damage(home: Path, cid: str = "a") -> None:
    """Two `individuals` rows of `cid` written twice (as a bundle with foreign ids did)."""
    first = f"campaign_id = '{cid}' AND seed_idx = 0 AND generation = 1 AND individual < 2"
    with db(home).write() as con:
        con.execute(f"INSERT INTO individuals SELECT * FROM individuals WHERE {first}")


def files(home: Path) -> set[str]:
    """The home's files, but for its launch reports: `run --id` traces its start-up there
    for the dashboard before anything is checked, and keeps it for any refusal, as the
    page shows the refusal from there."""
    return {str(p.relative_to(home)) for p in home.rglob("*") if "launch" not in p.parts}


@pytest.fixture
def damaged(home: Path) -> Path:
    run_campaign(parse_config(SMALL), home, campaign_id="a")
    damage(home)
    return home


def test_run_refuses_a_damaged_store_before_writing_and_runs_once_it_is_fixed(damaged, env):
    home = damaged
    before = files(home)
    p = cli(["run", *TINY, "--id", "b", "--quiet"], env, ok=False)
    line = one_line_error(p, DAMAGED, ADVICE, str(home / "latentfuzz.duckdb"))
    assert line.startswith("error: the store ")
    assert sc.campaign(db(home), "b") is None
    assert files(home) == before  # no folder, no lock, no recovery rows
    assert "duplicate-keys" in cli(["doctor"], env, ok=False).stdout
    cli(["doctor", "--fix"], env)
    cli(["run", *TINY, "--id", "b", "--quiet"], env)
    assert sc.campaign(db(home), "b")["status"] == "finished"


def test_resume_and_import_refuse_a_damaged_store(home, env, tmp_path):
    run_campaign(parse_config(SMALL), home, campaign_id="a")
    bundle = tmp_path / "a.zip"
    cli(["export", "a", "--bundle", str(bundle)], env)
    with db(home).write() as con:  # as Ctrl-C leaves it: resumable
        con.execute("UPDATE campaigns SET status = 'interrupted' WHERE id = 'a'")
    damage(home)
    one_line_error(cli(["resume", "a"], env, ok=False), DAMAGED, ADVICE)
    assert sc.campaign(db(home), "a")["status"] == "interrupted"
    one_line_error(cli(["import", str(bundle), "--as", "copy"], env, ok=False), DAMAGED, ADVICE)
    assert sc.campaign(db(home), "copy") is None
    assert not (home / "campaigns" / "copy").exists()


def test_a_grid_refuses_a_damaged_store_before_its_first_cell(damaged, tmp_path):
    spec = GridSpec("g", SMALL, {"seed": [1, 2]})
    with pytest.raises(StoreError, match="is damaged"):
        run_grid(spec, damaged, workers=0)
    assert set(sc.list_campaigns(db(damaged))["id"]) == {"a"}


def test_a_large_store_is_judged_by_doctors_record(damaged, monkeypatch):
    """Above LIVE_ROWS a start does not scan the table: doctor's last verdict, recorded in
    the store, decides; a clean doctor run clears it."""
    store = db(damaged)
    assert maintenance.damage(store) == ["individuals: 2 keys appear twice"]
    monkeypatch.setattr(maintenance, "LIVE_ROWS", 0)
    assert maintenance.damage(store) == []  # not scanned, and doctor has not said so yet
    doctor.check(store, damaged)
    with pytest.raises(StoreError, match=r"is damaged \(1 problem: individuals: 2 keys"):
        maintenance.require_sound(store)
    doctor.fix(store, damaged)
    assert doctor.check(store, damaged) == []
    maintenance.require_sound(store)  # the record is cleared
    assert store.query("SELECT * FROM meta WHERE key = 'damage'").empty
