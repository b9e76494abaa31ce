"""The close is atomic: a campaign's status and its metrics are committed together, so a
kill -9 anywhere in the close leaves it either finished with its metrics or resumable
(`running` with a dead process: crashed). `doctor` names a finished campaign without
metrics (an older version's close, a hand), and `doctor --fix` writes the very metrics a
normal close writes, by replaying the search against its rows.

The kills are real: the campaign runs in a child process that ends itself with
os._exit(9) (what kill -9 leaves: no handler, no flush, no atexit) at the exact point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.io import doctor
from store import campaigns as sc
from store import liveness
from store import metrics as sm
from tests.helpers import db
from tests.reliability.conftest import cli

SMALL = {
    "seeds": 2,
    "seed": 3,
    "strategy_params": {"generations": 4, "population": 6, "best_left": 2},
}
#: The CLI's `run`, with one store function wrapped to end the process at once, either
#: after it returns ("after") or when it is called ("at").
KILL_AT = """
import os, sys
import importlib
owner, name, when = sys.argv[1:4]
mod, _, cls = owner.partition(":")
target = importlib.import_module(mod)
holder = getattr(target, cls) if cls else target
real = getattr(holder, name)
def wrapped(*a, **k):
    if when == "at":
        os._exit(9)
    out = real(*a, **k)
    os._exit(9)
setattr(holder, name, wrapped)
from engine.cli.main import main
sys.argv = ["latentfuzz", *sys.argv[4:]]
main()
"""


def killed_run(env, tmp_path: Path, owner: str, name: str, when: str, cid: str = "c") -> None:
    import yaml

    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(SMALL))
    args = ["run", "--config", str(cfg), "--id", cid, "--quiet"]
    p = subprocess.run(
        [sys.executable, "-c", KILL_AT, owner, name, when, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,  # ends the child on a hang too
    )
    assert p.returncode == 9, (p.returncode, p.stderr)


def reference_metrics(home: Path) -> dict:
    run_campaign(parse_config(SMALL), home, campaign_id="ref")
    m = sm.metrics(db(home), "ref")
    assert m is not None
    return m


#: Measured after the close, as a differential campaign's validity scores are: a kill
#: between the two leaves a finished campaign without them, which `latentfuzz validate ID`
#: measures again (engine/campaign/realism.py).
AFTER_CLOSE = ("campaign_id", "realism")


def same_metrics(a: dict, b: dict) -> None:
    assert {k: v for k, v in a.items() if k not in AFTER_CLOSE} == {
        k: v for k, v in b.items() if k not in AFTER_CLOSE
    }
    assert a["realism"] in (None, b["realism"])


def test_a_kill_right_after_the_closing_write_leaves_a_complete_campaign(home, env, tmp_path):
    """The point where 5 kills of 20 left `finished` without metrics: after the status
    write, before the metrics'. Now there is one write: after it, both are in."""
    ref = reference_metrics(home)
    killed_run(env, tmp_path, "store.writer:CampaignWriter", "finish", "after")
    c = sc.campaign(db(home), "c")
    assert c["status"] == "finished"
    m = sm.metrics(db(home), "c")
    assert m is not None, "finished without metrics: the close is not atomic"
    same_metrics(m, ref)
    assert [f for f in doctor.check(db(home), home) if f.campaign == "c"] == []


def test_a_kill_inside_the_closing_write_leaves_it_resumable(home, env, tmp_path):
    """Killed inside the closing transaction (the metrics written, not committed): nothing
    of the close is in, the campaign reads as crashed, and `resume` closes it with the
    metrics an uninterrupted run has."""
    ref = reference_metrics(home)
    killed_run(env, tmp_path, "store.writer", "put_metrics", "at")
    c = sc.campaign(db(home), "c")
    assert liveness.status(home, "c", c["status"]) in liveness.RESUMABLE
    assert sm.metrics(db(home), "c") is None
    assert "c finished" in " ".join(cli(["resume", "c", "--quiet"], env).stdout.split())
    assert sc.campaign(db(home), "c")["status"] == "finished"
    same_metrics(sm.metrics(db(home), "c"), ref)


def test_a_kill_before_the_close_computes_its_metrics_leaves_it_resumable(home, env, tmp_path):
    killed_run(env, tmp_path, "engine.campaign.runner", "close_metrics", "at")
    c = sc.campaign(db(home), "c")
    assert liveness.status(home, "c", c["status"]) == "crashed"
    cli(["resume", "c", "--quiet"], env)
    assert sm.metrics(db(home), "c") is not None


@pytest.fixture
def lost_metrics(home: Path) -> tuple[dict, dict]:
    """A finished campaign whose metrics row is gone, as the old close left 5 kills of 20;
    returns its metrics and campaign row from before."""
    run_campaign(parse_config(SMALL), home, campaign_id="c")
    store = db(home)
    before, row = sm.metrics(store, "c"), sc.campaign(store, "c")
    with store.write() as con:
        con.execute("DELETE FROM campaign_metrics WHERE campaign_id = 'c'")
    return before, row


def test_doctor_finds_a_finished_campaign_without_metrics_and_fix_recomputes_them(
    home, env, lost_metrics
):
    before, row = lost_metrics
    found = doctor.check(db(home), home)
    assert [(f.kind, f.campaign) for f in found] == [("missing-metrics", "c")], found
    assert "`latentfuzz doctor --fix` recomputes" in found[0].detail
    p = cli(["doctor"], env, ok=False)
    assert p.returncode == 1 and p.stdout.startswith("missing-metrics\tc\t"), p.stdout
    p = cli(["doctor", "--fix"], env)
    assert "fixed: recomputed the metrics of c" in p.stdout, p.stdout
    assert "no anomaly" in p.stdout
    same_metrics(sm.metrics(db(home), "c"), before)
    after = sc.campaign(db(home), "c")
    # The campaign keeps its own close: status, end, time and evaluations.
    for k in ("status", "finished_at", "wall_seconds", "evaluations", "store_seconds", "error"):
        assert after[k] == row[k] or (after[k] != after[k] and row[k] != row[k]), k


def test_doctor_fix_keeps_the_finding_when_the_campaign_cannot_be_replayed(home, lost_metrics):
    store = db(home)
    with store.write() as con:  # as if its models had changed since
        con.execute(
            "UPDATE campaigns SET environment = json_object('model_sha256', json_object()) "
            "WHERE id = 'c'"
        )
    done = doctor.fix(store, home)
    assert len(done) == 1 and done[0].startswith("not fixed: the metrics of c: campaign c ran")
    assert [(f.kind, f.campaign) for f in doctor.check(store, home)] == [("missing-metrics", "c")]
    assert sm.metrics(store, "c") is None and not liveness.alive(home, "c")


def test_imported_results_have_no_metrics_and_are_not_a_finding(home):
    run_campaign(parse_config(SMALL), home, campaign_id="c")
    store = db(home)
    with store.write() as con:
        con.execute("DELETE FROM campaign_metrics")
        con.execute("UPDATE campaigns SET kind = 'imported'")
    assert doctor.check(store, home) == []
