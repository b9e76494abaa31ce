"""Which campaigns name a model: a model of the home that campaigns use is neither renamed
nor deleted (engine/models/manage.py), as each campaign records its models by name."""

from __future__ import annotations

from store.connection import Store


def campaigns_using(store: Store, name: str) -> list[dict]:
    """The campaigns whose generator, classifier or second classifier is ``name``, oldest
    first: one dict per campaign with its id and name."""
    return store.query_rows(
        "SELECT id, name FROM campaigns WHERE ? IN (generator, classifier, classifier_b) "
        "ORDER BY created_at, id",
        [name],
    )
