"""The dashboard server's per-process start (dashboard/warmup.py; issue 36, point 7): no
full garbage collection after each script run (0.3 to 1 s per run with 300 campaigns),
and the heavy imports done once in the background, not by the first page that needs one."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

from streamlit import config

from dashboard import warmup
from tests.helpers import page_opener


def test_a_page_run_collects_no_garbage_and_warms_the_imports_once(home: Path, monkeypatch):
    monkeypatch.setattr(gc, "freeze", lambda: None)  # the test process's heap stays as it is
    at = page_opener(home, monkeypatch)("campaigns.py")
    assert not at.exception, at.exception
    # The server's ScriptRunner runs gc.collect(2) after every run while this is on
    # (AppTest's runner never does, so the option is what is checked).
    assert config.get_option("runner.postScriptGC") is False
    assert warmup.DONE.wait(120)
    assert {"pandas", "altair", "scipy.stats", "dashboard.compare"} <= set(sys.modules)
    # ...and every component a page imports (the gallery, the timeline, the repair form).
    assert {"dashboard.timeline", "dashboard.repair_form", "dashboard.vega"} <= set(sys.modules)
    assert "engine.campaign.config" in sys.modules  # torch and the engine, for New campaign
    # ...and the module of every engine.api name a page imports at its top (the Campaign
    # page's first run imported the result importer's, 0.1 s).
    assert {"imported_note", "check_zip", "label_stats"} <= set(warmup.page_names())
    assert {"engine.io.import_results", "engine.io.export"} <= set(sys.modules)
    assert warmup.start() is False  # once per process: later sessions start nothing


def test_the_first_chart_is_paid_for_in_advance(monkeypatch):
    converted = []
    from dashboard import vega

    monkeypatch.setattr(vega, "_convert", lambda chart: converted.append(chart))
    warmup.warm_charts()
    assert len(converted) == 1 and converted[0].to_dict()["mark"]["type"] == "line"
