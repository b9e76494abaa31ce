"""What every `latentfuzz` command group shares: consoles, the --home option, the store,
table cells."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from engine.home import ENV_VAR, db_path, resolve_home

console = Console()
err = Console(stderr=True)

HomeOpt = Annotated[
    Path | None,
    typer.Option("--home", help=f"data directory [default: ${ENV_VAR} or ~/.latentfuzz]"),
]


def open_store(home: Path | None):
    """The store of the data directory chosen by --home or the environment, with recovery
    files ingested (store/recovery.py) and dead `running` campaigns marked `crashed`
    (store/liveness.py)."""
    from store import Store, recovery
    from store.liveness import reap

    store = Store(db_path(resolve_home(home)))
    recovery.ingest(store)  # rows a campaign saved when its user stopped it waiting
    reap(store)
    return store


def shown_status(home: Path | None, cid: str, stored: str) -> str:
    """A campaign's status as readers report it: `crashed` when its process is gone, also
    in a read-only store that could not be marked."""
    from store.liveness import status

    return status(resolve_home(home), cid, stored)


def warn_unfinished(home: Path | None, cid: str, stored: str) -> None:
    """One line on stderr when a campaign is not finished, so exports and studies say so."""
    st = shown_status(home, cid, stored)
    if st == "crashed":
        msg = f"campaign {cid} crashed; using what it wrote (`latentfuzz resume {cid}` resumes it)"
    elif st in ("running", "interrupted"):
        msg = f"campaign {cid} is {st}; using what it has written so far"
    else:
        return
    err.print(f"warning: {msg}", markup=False, highlight=False, soft_wrap=True)


def fmt(v: Any, spec: str = "") -> str:
    """A table cell: empty for missing values (None, NaN, pandas NA)."""
    import pandas as pd

    if v is None or pd.isna(v):
        return ""
    return format(int(v), "d") if spec == "d" else format(v, spec)
