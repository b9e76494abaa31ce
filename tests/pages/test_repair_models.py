"""The Models page shows a repaired model's lineage (dashboard/lineage.py)."""

from __future__ import annotations

from tests.helpers import page_opener
from tests.pages.test_compare_lineage import CHILD, write_child


def test_models_page_shows_a_repaired_models_lineage(tmp_path, monkeypatch):
    write_child(tmp_path)
    at = page_opener(tmp_path, monkeypatch)("models.py")
    assert not at.exception
    card = [m.value for m in at.markdown if "**repair of**" in m.value]
    assert len(card) == 1
    text = card[0].replace("\\", "")
    assert "**repair of**: mnist-convnet (the repair)" in text
    assert (
        "**failures used**: 37 failures from campaign c-src, validity filter ssim-nearest default"
        in text
    )
    assert "training images per failure 10.0, epochs 5, learning rate 0.0005, random seed 0" in text
    assert CHILD in [e.label.split(" · ")[0] for e in at.expander]
