"""AppTest of Compare with a parent classifier and its repaired child (dashboard/lineage.py):
the note saying which is a repair of which, and the parent's campaign placed first."""

from __future__ import annotations

import json

from engine.models import zoo
from store import Store
from tests.helpers import page_opener

CHILD = "mnist-convnet-r1"


def write_child(home, parent: str = "mnist-convnet") -> None:
    """A repaired child's card as `latentfuzz repair` writes it: the parent's, renamed,
    with the lineage (parent, failures used, settings)."""
    card = json.loads((zoo.model_folder(parent) / zoo.CARD).read_text())
    card |= {
        "name": CHILD,
        "lineage": {
            "parent": parent,
            "arm": "repair",
            "failures": {"campaign": "c-src", "validators": {"ssim-nearest": None}, "used": 37},
            "settings": {"replay_per_failure": 10.0, "epochs": 5, "lr": 0.0005},
            "seed": 0,
        },
    }
    folder = home / "models" / CHILD
    folder.mkdir(parents=True, exist_ok=True)
    (folder / zoo.CARD).write_text(json.dumps(card))


def test_compare_notes_a_repair_and_places_the_parent_first(two, monkeypatch):
    home, (first, second) = two
    write_child(home)
    with Store(home / "latentfuzz.duckdb").write() as con:
        parent = con.execute("SELECT classifier FROM campaigns WHERE id = ?", [first]).fetchone()
        con.execute("UPDATE campaigns SET classifier = ? WHERE id = ?", [CHILD, second])
    assert parent[0] == "mnist-convnet"
    opener = page_opener(home, monkeypatch)
    at = opener("compare.py", id=[second, first])  # the child's campaign chosen first
    assert not at.exception
    notes = [i.value.replace("\\", "") for i in at.info]  # markdown escapes dropped
    assert f"{CHILD} is a repair of mnist-convnet (37 failures from campaign c-src)" in notes
    table = at.markdown[0].value
    assert table.index("| first |") < table.index("| second |")  # the parent's first


def test_compare_says_nothing_of_unrelated_classifiers(two_ab, monkeypatch):
    home, (first, second) = two_ab
    write_child(home)  # a repaired model no compared campaign used
    opener = page_opener(home, monkeypatch)
    at = opener("compare.py", id=[first, second])
    assert not at.exception
    assert not [i for i in at.info if "is a repair of" in i.value]
