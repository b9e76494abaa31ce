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
#: What a seed that searched its whole budget without failing is called, where "survived"
#: does not say it: a targeted search's seed that never reached its class (the counts read
#: "8 reached target · 1 survived" beside cards that said "(misclassified)").
SURVIVED_AS = {"targeted": "did not reach target"}


def failed_as(criterion: str | None) -> str:
    """The name of a failing seed under `criterion` (None: the default, misclassified)."""
    criterion = criterion or "misclassified"
    return FAILED_AS.get(criterion, f"failing ({criterion})")


def status_as(status: str, criterion: str | None) -> str:
    """A stored seed status (store.schema.SEED_STATUSES) in the campaign's words: the
    counts and the cards both say it, so that they agree."""
    if status == "misclassified":
        return failed_as(criterion)
    if status == "survived":
        return SURVIVED_AS.get(criterion or "misclassified", status)
    return status


def target_outcome(failed: bool, target: int | str, predicted: int | str) -> str:
    """A targeted seed's outcome naming its target: "reached target 4", or "did not reach
    target 4 (predicted 9)" (a card that said "predicted 9 (survived)" never named 4)."""
    if failed:
        return f"{FAILED_AS['targeted']} {target}"
    return f"{SURVIVED_AS['targeted']} {target} (predicted {predicted})"
