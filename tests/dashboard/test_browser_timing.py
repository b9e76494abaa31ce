"""Time to act, in the browser (issue 36, point 7): engine/bench/ui.py run at full size
(300 campaigns, one core kept busy), its figures written to test-artifacts/ui-timing.json,
with what the server did for each page (--profile: script runs, queries, st.rerun calls).

Slow (about ten minutes to build the store and walk every page), so `make test` leaves it
out; `make bench-ui` runs it. It asserts what was measured, never how fast: figures from a
shared machine are read against their load average, not failed on (docs/measured/dashboard.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.dashboard.browser import CHROMIUM, REPO

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_time_to_act_is_measured_and_written(tmp_path: Path):
    from engine.bench import ui

    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: `make chromium` installs it"
    out = REPO / "test-artifacts" / "ui-timing.json"
    home = str(tmp_path / "home")
    ui.main(["--campaigns", "300", "--home", home, "--out", str(out), "--profile"])
    fig = json.loads(out.read_text())
    assert fig["campaigns"] == 300 and fig["busy_core"] is True and fig["repeat"] == 3
    assert set(fig["pages"]) >= {"campaigns", "new_campaign", "campaign", "studies", "label"}
    for name, r in fig["pages"].items():
        assert r["exceptions"] == 0, f"{name} showed an exception"
        # Each page on three fresh servers: the median of their first loads.
        assert len(r["first_all_s"]) == 3 and r["first_s"] == sorted(r["first_all_s"])[1]
        assert r["first_cached_s"] > 0 and len(r["reruns_s"]) == 9
        # Work, counted on the server: one script run per load (two tabs) and per rerun,
        # no st.rerun chains and no fragment runs on a page at rest.
        first, reruns = r["server"]["first"], r["server"]["reruns"]
        assert (first["runs"], first["reruns"], first["fragments"]) == (2, 0, 0), (name, first)
        assert (reruns["runs"], reruns["reruns"], reruns["fragments"]) == (3, 0, 0), name
    # The floor: a one-line Streamlit page, cold, beside them.
    assert len(fig["empty_page_s"]) == 3 and all(t > 0 for t in fig["empty_page_s"])
    assert fig["label"]["keys"] == 20
    assert fig["launch"]["launch_s"] > 0
