"""store/annotations.py: tags and notes on campaigns and studies, stored and checked."""

from __future__ import annotations

import pytest

from store import Store, StoreError
from store import annotations as an


def test_tags_and_notes_are_stored_and_checked():
    store = Store()
    assert an.get(store, "campaign", "c") == {"tags": [], "notes": ""}
    an.annotate(store, "campaign", "c", tags=[" paper ", "low", "paper", ""])
    an.annotate(store, "campaign", "c", notes="rerun with seed 2")
    assert an.get(store, "campaign", "c") == {
        "tags": ["paper", "low"],
        "notes": "rerun with seed 2",
    }
    assert an.table(store, "campaign")["tags"].tolist() == [["paper", "low"]]
    with pytest.raises(StoreError, match="without a comma"):
        an.annotate(store, "campaign", "c", tags=["x" * 41])
    with pytest.raises(StoreError, match="expected one of campaign, study"):
        an.get(store, "run", "c")
