"""The dashboard's access to the store: one cached Store per home, short cached queries."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from engine.home import db_path, resolve_home
from store import Store


def get_home() -> Path:
    """The data directory, by the same rule as the CLI ($LATENTFUZZ_HOME or ~/.latentfuzz)."""
    return resolve_home(None)


@st.cache_resource
def _store(path: str) -> Store:
    # Store opens the file per query, so caching it holds no lock between reruns.
    return Store(path)


def get_store() -> Store:
    """The home's store, with dead `running` campaigns marked `crashed` on every rerun
    (a few lock checks; store/liveness.py)."""
    from store import recovery
    from store.liveness import reap

    store = _store(str(db_path(get_home())))
    recovery.ingest(store)
    reap(store)
    return store
