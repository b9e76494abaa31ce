"""AppTest of the Campaign page around the campaign's process: starting (or failing to),
followed live from another process, interrupted, crashed, resumed, closing."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from engine.campaign import startup
from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from tests.helpers import page_opener
from tests.pages.charts import specs

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")


def test_campaign_page_for_an_unknown_id_says_so_and_waits_for_it(app, seeded):
    at = app("campaign.py", id="not-started-yet")
    assert not at.exception
    # Nothing launched it and no process reported start-up: not "Starting the campaign".
    from dashboard.text import md_text

    assert f"No campaign with id {md_text('not-started-yet')}" in at.warning[0].value
    assert not [i for i in at.info if "Starting" in i.value]
    assert not at.get("progress")  # no start-up checklist for an id nothing started
    (seeded[0] / "launch").mkdir(exist_ok=True)
    (seeded[0] / "launch" / "just-launched.log").write_text("")  # the New campaign page's
    at = app("campaign.py", id="just-launched")
    assert "Starting the campaign" in at.info[0].value
    # Its chart's empty frame, drawn while it starts (the browser loads the chart's code).
    assert len(specs(at)) == 1 and "No generation written yet" in at.caption[0].value


def test_a_failed_launch_says_why_in_one_line_first(app, seeded):
    from dashboard.launch import failure

    traceback = (
        'n.py", line 1126, in __call__\n    return self.main(*args)\n'
        "FileExistsError: [Errno 17] File exists: '/h/campaigns/x'\n"
    )
    assert failure(traceback) == "FileExistsError: [Errno 17] File exists: '/h/campaigns/x'"
    one_line = "loading models\nerror: unknown generator 'nope'; expected one of [...]\n"
    assert failure(one_line) == "error: unknown generator 'nope'; expected one of [...]"
    assert failure("") == "" and failure("a\nlast words\n") == "last words"
    (seeded[0] / "launch").mkdir(exist_ok=True)
    (seeded[0] / "launch" / "broken.log").write_text(traceback)
    at = app("campaign.py", id="broken")
    assert not at.exception
    assert at.error[0].value.startswith("The campaign did not start: FileExistsError: [Errno 17]")
    assert at.expander[0].label == "Its log"


def test_the_campaign_page_checks_off_the_steps_while_it_waits(home: Path, monkeypatch):
    cid = "not-started-yet"
    startup.report(home, cid, startup.STEPS[0])
    time.sleep(0.2)
    startup.report(home, cid, startup.STEPS[1])
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    assert "Starting the campaign" in at.info[0].value
    checklist = next(m.value for m in at.markdown if startup.STEPS[0] in m.value)
    assert f"✅ {startup.STEPS[0]}" in checklist and f"⏳ {startup.STEPS[1]}" in checklist
    (bar,) = at.get("progress")
    assert bar.proto.text.startswith("start-up:") and 0 < bar.proto.value < 100


def test_an_interrupted_campaign_offers_resume_in_view_and_waits_for_it(home: Path, monkeypatch):
    from dashboard import launch
    from store import Store
    from store.liveness import CampaignLock

    def stop_at_2(p) -> None:
        if p.generation == 2:
            raise KeyboardInterrupt

    cfg = parse_config({"seeds": 3, "seed": 1, "strategy_params": {"generations": 30}})
    cid = run_campaign(cfg, home, progress=stop_at_2).campaign_id
    calls = []
    monkeypatch.setattr(launch, "resume", lambda h, c: calls.append((h, c)))
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception
    assert "This campaign is interrupted" in at.warning[0].value
    button = next(b for b in at.button if b.label == "Resume")
    assert not [e for e in at.expander if any(b.label == "Resume" for b in e.button)]
    button.click().run()
    assert calls == [(home, cid)]
    assert any("Resuming" in i.value for i in at.info)  # waits for the process
    # The resumed process holds the campaign's lock and marks it running: the page goes
    # live (the next reruns would show its progress).
    lock = CampaignLock(home, cid).acquire()
    try:
        with Store(home / "latentfuzz.duckdb").write() as con:
            con.execute("UPDATE campaigns SET status = 'running' WHERE id = ?", [cid])
        at.run()
        assert not at.exception and not [w for w in at.warning if "interrupted" in w.value]
        assert any(m.value == "**Status:** running" for m in at.markdown)
    finally:
        lock.release()


def test_a_finished_campaign_still_writing_its_metrics_stays_live(home: Path, monkeypatch):
    """Watched to its end, a campaign's page stopped refreshing at "finished", before its
    process had written the metrics, and said "reload then" for good."""
    from store import Store
    from store.liveness import CampaignLock

    cfg = parse_config({"seeds": 2, "seed": 1, "strategy_params": {"generations": 3}})
    cid = run_campaign(cfg, home).campaign_id
    with Store(home / "latentfuzz.duckdb").write() as con:
        con.execute("DELETE FROM campaign_metrics WHERE campaign_id = ?", [cid])
    lock = CampaignLock(home, cid).acquire()  # its process, still closing
    try:
        at = page_opener(home, monkeypatch)("campaign.py", id=cid, tab="Metrics")
        assert not at.exception
        assert any("writing its metrics" in c.value for c in at.caption)
        assert not at.tabs  # the live view only
    finally:
        lock.release()
    at.run()
    assert not at.exception
    assert not any("writing its metrics" in c.value for c in at.caption)
    assert any("No metrics were stored" in i.value for i in at.info)


def test_a_crashed_campaign_says_why_once_beside_its_resume_button(home: Path, monkeypatch):
    from store import Store
    from store.liveness import CRASHED_ERROR

    cfg = parse_config({"seeds": 2, "seed": 1, "strategy_params": {"generations": 5}})
    cid = run_campaign(cfg, home).campaign_id
    with Store(home / "latentfuzz.duckdb").write() as con:  # as a reader marks a dead one
        con.execute(
            "UPDATE campaigns SET status = 'crashed', error = ? WHERE id = ?",
            [CRASHED_ERROR.format(cid=cid), cid],
        )
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    assert at.warning[0].value.startswith(
        "This campaign is crashed: the campaign process ended without closing the campaign "
        "(killed, out of memory or a power loss). Its figures cover"
    )
    assert not at.error  # the red box that repeated it, with the command line's advice
    assert any(b.label == "Resume" for b in at.button)


# A whole 20-seed campaign watched to its end (50 s): `make test-slow`. The reader that
# never meets a lock error is tests/store/test_concurrency.py's, in the default suite.
@pytest.mark.slow
def test_a_cli_campaign_shows_up_and_updates_live(home: Path, env, monkeypatch):
    """Started from a terminal in another process, watched by the Campaign page: no lock
    error at any refresh, and the page follows the campaign to its end."""
    import time

    from store import Store
    from store import campaigns as sc
    from tests.helpers import start_cli, wait_for_campaign

    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    st.cache_resource.clear()
    # Long enough to outlast a few of the writer's flushes (2 s apart at least): with the
    # classifier as a graph, 10 seeds x 120 generations ended before its first one.
    proc = start_cli(
        [
            "run",
            "--seeds",
            "20",
            "--generations",
            "400",
            "--perturbation",
            "low",
            "--seed",
            "3",
            "--quiet",
        ],
        env,
    )
    cid = wait_for_campaign(Store(home / "latentfuzz.duckdb"), proc)
    statuses = []
    while True:
        at = AppTest.from_file(APP, default_timeout=60).run()
        at.switch_page("../pages/campaign.py")
        at.query_params["id"] = cid
        at.run()  # one refresh of the page, as the live fragment does every 2 s
        assert not at.exception, at.exception
        assert not [e.value for e in at.error]
        status = next(m.value for m in at.markdown if m.value.startswith("**Status:**"))
        # While it runs: a progress bar that says where it is and how long is left.
        bars = [b.proto.text for b in at.get("progress")]
        statuses.append(" ".join([status, *bars]))
        if proc.poll() is not None and "finished" in statuses[-1]:
            break
        time.sleep(0.5)
    assert proc.returncode == 0
    running = [s for s in statuses if "running" in s]
    assert len(set(running)) >= 2, f"the page did not follow the campaign: {statuses}"
    searching = [s for s in running if "drawing" not in s]  # before its first generation
    assert searching and all("of 400" in s and "seeds done" in s for s in searching), running
    assert any("left" in s for s in running), running
    assert sc.campaign(Store(home / "latentfuzz.duckdb"), cid)["status"] == "finished"
