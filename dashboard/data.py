"""The dashboard's access to the store: one cached Store per home, short cached queries."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.memo import content_key, kept
from engine.api import LatentfuzzError, check_zip, db_path, resolve_home
from store import Store, recovery
from store import campaigns as sc
from store.campaigns import reap


def get_home() -> Path:
    """The data directory, by the same rule as the CLI ($LATENTFUZZ_HOME or ~/.latentfuzz)."""
    return resolve_home(None)


@st.cache_resource
def _store(path: str) -> Store:
    # Store opens the file per query, so caching it holds no lock between reruns.
    return Store(path)


def home_store() -> Store:
    """The home's store as it is (app.py opens the page run's session on it first, so
    that the checks of `get_store` use that session's connection, not one of their own)."""
    return _store(str(db_path(get_home())))


def fragment(func: Callable[..., Any] | None = None, *, run_every: float | None = None) -> Any:
    """`st.fragment`, whose runs of its own (its timer, its widgets) read the store on one
    connection, as a page run does (app.py): outside the page's session each query opened
    its own, 6 to 13 per run of a live panel."""

    def wrap(f: Callable[..., Any]) -> Any:
        @functools.wraps(f)
        def body(*args: Any, **kwargs: Any) -> Any:
            with home_store().session():  # (nested in a page run's: that one serves)
                return f(*args, **kwargs)

        return st.fragment(body, run_every=run_every)

    return wrap if func is None else wrap(func)


def get_store() -> Store:
    """The home's store, with dead `running` campaigns marked `crashed` on every rerun
    (a few lock checks; store/liveness.py)."""

    store = home_store()
    recovery.ingest(store)
    reap(store)
    return store


#: Statuses whose rows never change (store/CONTRACT.md, rule 5): safe to cache for good.
FINAL = ("finished", "failed")
_SET_QUERIES = {
    "campaigns": sc.campaigns_by_id,
    "seeds": sc.seeds_of,
    "best_fitness": sc.best_fitness_of,
}


@st.cache_data(max_entries=64, show_spinner=False)
def _cached_set(path: str, kind: str, key: tuple[tuple[str, str], ...]) -> pd.DataFrame:
    # Keyed by (campaign id, status) pairs: a campaign that finishes gets a new key.
    return _SET_QUERIES[kind](_store(path), [cid for cid, _ in key])


def read_set(kind: str, ids: list[str], status: dict[str, str]) -> pd.DataFrame:
    """`kind` ('campaigns', 'seeds' or 'best_fitness') of several campaigns: finished
    and failed ones from the cache (one query the first time), the others in one query
    every rerun; rows in the order of `ids`. `status` maps id -> stored status."""
    key = tuple((cid, status.get(cid, "")) for cid in dict.fromkeys(ids))
    done = tuple(k for k in key if k[1] in FINAL)
    live = [cid for cid, s in key if s not in FINAL]
    path = str(db_path(get_home()))
    parts = [_cached_set(path, kind, done)] if done else []
    if live:
        parts.append(_SET_QUERIES[kind](_store(path), live))
    if len(parts) == 1:
        return parts[0]
    df = pd.concat(parts, ignore_index=True)
    col = "id" if kind == "campaigns" else "campaign_id"
    order = {cid: i for i, (cid, _) in enumerate(key)}
    return df.iloc[df[col].map(order).argsort(kind="stable")].reset_index(drop=True)


#: Zips of finished campaigns kept in memory, the oldest first out of the budget.
ZIP_BUDGET = 64 * 2**20
_ZIPS: dict[tuple[str, str, Hashable], bytes] = {}
_ZIP_LOCK = threading.Lock()


def finished_zip(store: Store, home: Path, cid: str, seeds: pd.DataFrame) -> bytes:
    """A finished campaign's zip (engine.api.zip_bytes), made once per content of its seed
    rows: it read and deflated every image at every rerun, a tenth of the page's time.
    A later change to the rows (a resume, a re-validation) makes it anew."""
    key = (str(home), cid, content_key(seeds))
    with _ZIP_LOCK:
        if key in _ZIPS:
            return _ZIPS[key]
    # Deferred (engine.api loads the exporter, and torch with it, on first use).
    from engine.api import zip_bytes

    archive = zip_bytes(store, home, cid, seeds)  # seeds.csv with the CSV's columns
    with _ZIP_LOCK:
        if len(archive) <= ZIP_BUDGET:
            while _ZIPS and sum(map(len, _ZIPS.values())) + len(archive) > ZIP_BUDGET:
                _ZIPS.pop(next(iter(_ZIPS)))
            _ZIPS[key] = archive
    return archive


def _zip_problem(home: Path, seeds: pd.DataFrame) -> str | None:
    try:
        check_zip(home, seeds)
    except LatentfuzzError as e:
        return str(e)
    return None


def zip_problem(home: Path, seeds: pd.DataFrame) -> str | None:
    """Why a finished campaign's zip cannot be made (an image missing or outside the
    home), or None: checked once per content of its seed rows, as the zip itself is made
    (a stat of every image at every rerun, 3,000 for a campaign of 1,000 seeds)."""
    return kept(_zip_problem, home, seeds)
