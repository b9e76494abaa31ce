"""Where a dashboard page's time goes on the server: a Streamlit server whose script runs
are each timed, counted and (optionally) profiled, for engine/bench/ui.py --profile.

    python -m engine.bench.ui_profile LOG streamlit run dashboard/app.py ...

starts Streamlit as `streamlit` would, with ScriptRunner._run_script wrapped: every script
run (a whole page or a fragment) appends one JSON line to LOG with its page, its seconds,
the store queries and connections it made, the st.rerun calls it asked for and, where
$LATENTFUZZ_UI_CPROFILE is set, the functions with the most cumulative time
($LATENTFUZZ_UI_CPROFILE_N of them, 25 unless set).
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

COUNTS = threading.local()


def _count(name: str) -> None:
    c = getattr(COUNTS, "c", None)
    if c is not None:
        c[name] = c.get(name, 0) + 1


def _wrap(owner: Any, attr: str, name: str) -> Callable[[], None]:
    fn = getattr(owner, attr)

    def counted(*a: Any, **k: Any) -> Any:
        _count(name)
        return fn(*a, **k)

    setattr(owner, attr, counted)
    return lambda: setattr(owner, attr, fn)


def install(log: str) -> Callable[[], None]:
    """Wrap the script runner and the counted calls; each run appends a line to `log`.
    Returns what undoes it (for tests; the server keeps it for its life)."""
    # Deferred (the wrapper is installed before streamlit's CLI starts, in this process only).
    import streamlit as st
    from streamlit.runtime.scriptrunner import script_runner

    # Deferred (likewise: the store's calls are counted only in a profiled server).
    from store import Store, host

    undo = [
        _wrap(Store, "query", "queries"),
        _wrap(Store, "query_rows", "queries"),
        _wrap(host, "attach", "connections"),
        _wrap(st, "rerun", "reruns"),
    ]
    profile = bool(os.environ.get("LATENTFUZZ_UI_CPROFILE"))
    top = int(os.environ.get("LATENTFUZZ_UI_CPROFILE_N", "25"))
    run = script_runner.ScriptRunner._run_script
    lock = threading.Lock()

    def timed(self: Any, rerun_data: Any) -> Any:
        COUNTS.c = {}
        prof = cProfile.Profile() if profile else None
        t0 = time.perf_counter()
        if prof:
            prof.enable()
        try:
            return run(self, rerun_data)
        finally:
            if prof:
                prof.disable()
            line: dict[str, Any] = {
                "t": time.time(),
                "page": getattr(rerun_data, "page_name", None)
                or getattr(rerun_data, "page_script_hash", ""),
                "query": getattr(rerun_data, "query_string", ""),
                "fragment": bool(getattr(rerun_data, "fragment_id_queue", None)),
                "script_s": round(time.perf_counter() - t0, 4),
                **COUNTS.c,
            }
            COUNTS.c = None  # a run of this thread's, not of the next one's
            if prof:
                out = io.StringIO()
                pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(top)
                line["top"] = out.getvalue().splitlines()[-top - 5 :]
            with lock, open(log, "a") as f:
                f.write(json.dumps(line) + "\n")

    script_runner.ScriptRunner._run_script = timed
    undo.append(lambda: setattr(script_runner.ScriptRunner, "_run_script", run))

    def uninstall() -> None:
        for u in undo:
            u()

    return uninstall


def main() -> None:
    log, *args = sys.argv[1:]
    install(log)
    # Deferred (streamlit's CLI after the wrapper).
    from streamlit.web import cli

    sys.argv = args
    cli.main()


if __name__ == "__main__":
    main()
