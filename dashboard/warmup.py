"""The dashboard server's start: the costs every page run paid, paid once per process.

Profiled with 300 campaigns (engine/bench/ui.py --profile, docs/measured/dashboard.md):
- Streamlit collected garbage after every script run (runner.postScriptGC), a full
  gc.collect(2) over a heap that holds torch, pandas and altair: 0.3 to 1 s per page run
  and per fragment run, with the GIL held, so the server answered nothing meanwhile.
  Python's own generational collection still runs; objects that live as long as the
  process (the imported modules) are frozen out of it after the warm-up.
- The first page of a session to import a heavy library waited for it: New campaign
  imported torch (its config model), Compare scipy.stats, the Campaign page altair.
  A background thread imports them while the first page shows.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import importlib
import pkgutil
import threading
from pathlib import Path

from streamlit import config

import dashboard

#: What pages import on first use (imported in a background thread, in this order).
HEAVY = (
    "pandas",
    "altair",
    "PIL.Image",
    "dashboard.components",
    "dashboard.gallery",
    "dashboard.launch",
    "scipy.stats",
    "dashboard.compare",
)
#: Modules of the dashboard package not imported in advance: the entry point, the
#: screenshot tool (Playwright), this one.
NOT_WARMED = ("app", "screenshots", "warmup")
#: engine.api names whose first use imports torch and the engine (New campaign's config),
#: besides those the pages import (`page_names`).
ENGINE = ("CampaignConfig", "resolve", "get_dataset", "zoo", "zip_bytes", "campaign_validity")
PAGES = Path(__file__).resolve().parent.parent / "pages"

_LOCK = threading.Lock()
_STARTED = threading.Event()
#: Set once the warm-up thread has imported HEAVY (tests and the bench wait on it).
DONE = threading.Event()


def no_gc_after_each_run() -> None:
    """Turn off Streamlit's full collection after every script run (see above)."""
    config.set_option("runner.postScriptGC", False)


def _warm() -> None:
    try:
        for name in HEAVY:
            # A library missing here fails the page that needs it, with its own message.
            try:
                importlib.import_module(name)
            except ImportError:
                continue
        # A store read's first conversion to pandas paid 0.3 s of one-off set-up (seen as
        # masking NULLs in a page's first seeds query): paid here, on a throwaway table.
        with contextlib.suppress(Exception):
            # Deferred (imported by the first page anyway; here off the page's thread).
            import duckdb

            with duckdb.connect() as con:
                con.execute("SELECT 1 AS a, NULL::INTEGER AS b, 'x' AS c").df()
        # Every shared component of the pages too: the first page of each kind paid for
        # its own (a finished campaign's first view ran 1.2 s, its second 0.3 s).
        for m in pkgutil.iter_modules(dashboard.__path__):
            if m.name not in NOT_WARMED:
                with contextlib.suppress(ImportError):
                    importlib.import_module(f"dashboard.{m.name}")
        # Deferred (engine.api loads its names on first use: this is that use).
        from engine import api

        for name in (*ENGINE, *page_names()):
            with contextlib.suppress(ImportError, AttributeError):
                getattr(api, name)
        warm_charts()
        # What exists now lives as long as the process: out of every later collection.
        gc.freeze()
    finally:
        DONE.set()


def page_names() -> list[str]:
    """The engine.api names the pages (and the dashboard's modules) import at their top:
    each loaded its module on a page's first run (the Campaign page's import of
    `imported_note` cost its first view 0.1 s, its modules compiled from source)."""
    names: list[str] = []
    for f in [*PAGES.glob("*.py"), *Path(dashboard.__path__[0]).glob("*.py")]:
        with contextlib.suppress(OSError, SyntaxError, ValueError):
            for node in ast.parse(f.read_text()).body:
                if isinstance(node, ast.ImportFrom) and node.module == "engine.api":
                    names += [a.name for a in node.names if a.name not in names]
    return names


def warm_charts() -> None:
    """The first chart a page drew paid 0.1 s of one-off set-up (altair's schema
    validators, narwhals' pandas namespace, loaded on first use): paid here."""
    with contextlib.suppress(Exception):
        # Deferred (loaded above, in the background; here only for this one chart).
        import altair as alt
        import pandas as pd

        # Deferred (it loads streamlit's chart code: the background's, not the page's).
        from dashboard import vega

        frame = pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]})
        vega._convert(alt.Chart(frame).mark_line(point=True).encode(x="a:Q", color="b:N"))


def start() -> bool:
    """Once per process: GC off after runs, heavy imports in a daemon thread. True the
    first time."""
    with _LOCK:  # two sessions' first runs may come at once
        if _STARTED.is_set():
            return False
        _STARTED.set()
    no_gc_after_each_run()
    # Deferred (a dashboard module: imported with the package's others, below).
    from dashboard import launcher

    launcher.start()  # campaigns launched from here fork from it: seconds off each start
    threading.Thread(target=_warm, name="latentfuzz-warmup", daemon=True).start()
    return True
