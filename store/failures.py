"""What a failing seed is called, by its campaign's failure criterion. A module of its own,
without pandas or DuckDB, so that `latentfuzz run`'s progress line can use it at no start-up
cost."""

from __future__ import annotations

#: What a failing seed is called, by the campaign's failure criterion: a differential
#: campaign's failures are inputs its two classifiers label differently, and "misclassified
#: 3" read as three errors of classifier A.
FAILED_AS = {
    "misclassified": "misclassified",
    "targeted": "reached target",
    "disagree": "A and B disagree",
}


def failed_as(criterion: str | None) -> str:
    """The name of a failing seed under `criterion` (None: the default, misclassified)."""
    criterion = criterion or "misclassified"
    return FAILED_AS.get(criterion, f"failing ({criterion})")
