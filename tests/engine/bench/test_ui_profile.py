"""engine/bench/ui_profile.py: each script run of the dashboard, counted (issue 36, point 7:
profile before optimising). The counts are what the browser bench reports per page."""

from __future__ import annotations

import json
from pathlib import Path

from engine.bench.ui_profile import install
from tests.helpers import page_opener


def test_each_script_run_is_logged_with_its_queries_and_reruns(home: Path, monkeypatch, tmp_path):
    log = tmp_path / "runs.jsonl"
    uninstall = install(str(log))
    try:
        at = page_opener(home, monkeypatch)("campaigns.py")
        assert not at.exception, at.exception
        at.run()
    finally:
        uninstall()
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(runs) == 3  # the app's first run, the switch to Campaigns, the rerun
    page = runs[-1]
    assert page["script_s"] > 0 and page["fragment"] is False
    assert page["queries"] >= 1 and page.get("reruns", 0) == 0
    assert page["connections"] == 1  # the page run's session serves every query
    at.run()  # uninstalled: nothing more is logged
    assert len(log.read_text().splitlines()) == 3
