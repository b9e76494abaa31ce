"""The dashboard's access to the store: one cached Store per home, short cached queries."""

from __future__ import annotations

import streamlit as st

from engine.home import db_path, resolve_home
from store import Store


@st.cache_resource
def get_store(home: str | None = None) -> Store:
    # Store opens the file per query, so caching it holds no lock between reruns.
    return Store(db_path(resolve_home(home)))
