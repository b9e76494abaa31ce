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
    """The store of the data directory chosen by --home or the environment."""
    from store import Store

    return Store(db_path(resolve_home(home)))


def fmt(v: Any, spec: str = "") -> str:
    """A table cell: empty for missing values (None, NaN, pandas NA)."""
    import pandas as pd

    if v is None or pd.isna(v):
        return ""
    return format(int(v), "d") if spec == "d" else format(v, spec)
