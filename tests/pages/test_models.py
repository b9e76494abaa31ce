"""AppTest of the Models page (pages/models.py): the zoo, formatted cards with samples, and
a user's own models beside the bundled ones."""

from __future__ import annotations

from pathlib import Path

from engine.models import zoo
from tests.helpers import page_opener


def test_models_page_lists_the_zoo(app):
    at = app("models.py")
    assert not at.exception
    names = at.dataframe[0].value["name"].tolist()
    assert {"mnist-convnet", "mnist-vae", "mnist-gan", "mnist-dm"} <= set(names)


def test_models_page_is_readable_with_samples_and_uploads(tmp_path, monkeypatch):
    """Formatted cards (no raw JSON, no None cells), sample images per generator, and the
    classifiers uploaded into the home listed."""
    home = tmp_path / "home"
    (home / "uploads").mkdir(parents=True)
    (home / "uploads" / "0123456789abcdef-mine.pt").write_bytes(b"x" * 10)
    at = page_opener(home, monkeypatch)("models.py")
    assert not at.exception, at.exception
    assert not at.get("image")  # samples on request: no model loaded for the page itself
    for t in at.toggle:
        t.set_value(True)
    at.run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert not table.isna().any().any()
    assert "None" not in table.astype(str).to_numpy()
    assert not at.get("code")  # no JSON dumps
    assert not [c.value for c in at.caption if c.value.startswith("No samples")]
    assert len(at.get("image")) >= 3  # one set of samples per generator
    assert at.dataframe[1].value["file"].tolist() == ["mine.pt"]
    assert any("trained with" in m.value for m in at.markdown)


def test_models_page_shows_user_models_beside_the_zoo(pets_app, tmp_path: Path, monkeypatch):
    # One bundled model is enough here, and drawing every zoo generator's samples would
    # take most of the test's time (test_models_page_lists_the_zoo shows the whole zoo).
    bundled = tmp_path / "bundled"
    bundled.mkdir()
    (bundled / "mnist-vae").symlink_to(zoo.models_dir() / "mnist-vae")
    monkeypatch.setattr(zoo, "models_dir", lambda: bundled)
    at = pets_app("models.py")
    assert not at.exception
    table = at.dataframe[0].value.set_index("name")
    assert table.loc["pets-vae", "source"] == "yours"
    assert table.loc["mnist-vae", "source"] == "bundled"
    assert table.loc["pets-convnet", "dataset"] == "pets"
    assert any(e.label.startswith("pets-vae · generator · pets · yours") for e in at.expander)
    pets = next(e for e in at.expander if e.label.startswith("pets-vae"))
    assert [x.type for x in pets.children.values()] == ["markdown", "toggle"]
    at.toggle(key="samples-pets-vae").set_value(True).run()
    assert not at.exception, at.exception
    pets = next(e for e in at.expander if e.label.startswith("pets-vae"))
    assert [x.type for x in pets.children.values()] == ["markdown", "toggle", "image"]  # 3-ch
    assert not any(c.value.startswith("No samples") for c in at.caption)
