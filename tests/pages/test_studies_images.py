"""The Validity studies page shows a study's images from the home only: a stored path that
leaves it (a study imported before the gate, a store edited by hand) is never rendered."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from engine.labelling.importing import import_csv
from store import Store
from tests.engine.labelling.test_importing import write_csv
from tests.helpers import page_opener


def undecided_study(home: Path, tmp_path: Path, image: str) -> str:
    """An imported crowd study (undecided images: the adjudication tab shows the first)
    whose every image path is then set to `image`, as an older store could hold it."""
    store = Store(home / "latentfuzz.duckdb")
    sid = import_csv(store, write_csv(tmp_path / "s.csv"), "mnist").study_id
    with store.write() as con:
        con.execute("UPDATE label_items SET image = ? WHERE study_id = ?", [image, sid])
    return sid


@pytest.mark.parametrize("where", ["inside", "absolute", "dotdot", "symlink"])
def test_the_adjudication_tab_renders_only_images_inside_the_home(tmp_path, monkeypatch, where):
    home = tmp_path / "home"
    (home / "u").mkdir(parents=True)
    secret = tmp_path / "secret.png"
    Image.fromarray(np.full((28, 28), 255, np.uint8)).save(secret)
    (home / "u" / "mine.png").write_bytes(secret.read_bytes())
    (home / "u" / "link.png").symlink_to(secret)
    image = {
        "inside": "u/mine.png",
        "absolute": str(secret),
        "dotdot": "../secret.png",
        "symlink": "u/link.png",
    }[where]
    sid = undecided_study(home, tmp_path, image)
    at = page_opener(home, monkeypatch)("studies.py", study=sid, tab="Adjudication")
    assert not at.exception
    assert any("undecided image" in c.value for c in at.caption)  # the tab is drawn
    shown = at.get("image")
    assert len(shown) == (1 if where == "inside" else 0)
