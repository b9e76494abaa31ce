"""New campaign and Models with a user's own dataset and models beside the bundled zoo."""

from __future__ import annotations

from pathlib import Path

import pytest

import engine.core.home
from engine.datasets import get_dataset
from engine.datasets.specs import make_spec, save_spec
from engine.models import zoo
from tests.helpers import page_opener
from tests.tiny_data import save_tiny_models, write_folder


@pytest.fixture
def app(tmp_path: Path, monkeypatch):
    """A home with dataset `pets` (an image folder), its models, and `old-convnet`, a
    classifier trained on an earlier state of the folder."""
    home = tmp_path / "home"
    monkeypatch.setattr(engine.core.home, "_current", home)  # restored: pages resolve the home
    folder = write_folder(tmp_path / "imgs", rejects=False)
    save_spec(make_spec(name="pets", root=str(folder)))
    ds = get_dataset("pets")
    save_tiny_models(home / "models", "pets", ds.shape, 3, ds.fingerprint())
    save_tiny_models(home / "models", "pets", ds.shape, 3, "0" * 16, prefix="old")
    return page_opener(home, monkeypatch)


def test_new_campaign_offers_each_dataset_with_its_own_models(app):
    at = app("new_campaign.py")
    assert not at.exception
    assert {"mnist", "pets"} <= set(at.selectbox[0].options)
    at.selectbox[0].set_value("pets").run()
    assert not at.exception
    assert at.selectbox[1].options == ["old-vae (yours)", "pets-vae (yours)"]
    assert set(at.selectbox[2].options) == {
        "old-convnet (yours)",
        "pets-convnet (yours)",
        "upload a TorchScript or ONNX file…",
    }
    assert "3 x 32 x 32 images, 3 classes" in [c.value for c in at.caption]
    at.selectbox[1].set_value("pets-vae").run()
    at.selectbox[2].set_value("pets-convnet").run()
    assert not at.error and not at.button[0].disabled
    at.selectbox[2].set_value("old-convnet").run()
    (err,) = at.error
    assert "0000000000000000" in err.value and "latentfuzz train classifier --dataset pets" in (
        err.value.replace("\\", ""))  # fmt: skip
    assert at.button[0].disabled


def test_models_page_shows_user_models_beside_the_zoo(app, tmp_path: Path, monkeypatch):
    # One bundled model is enough here, and drawing every zoo generator's samples would
    # take most of the test's time (tests/dashboard/test_pages.py shows the whole zoo).
    bundled = tmp_path / "bundled"
    bundled.mkdir()
    (bundled / "mnist-vae").symlink_to(zoo.models_dir() / "mnist-vae")
    monkeypatch.setattr(zoo, "models_dir", lambda: bundled)
    at = app("models.py")
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


def test_campaign_page_of_a_removed_dataset_says_why(app, tmp_path: Path):
    from engine.campaign.config import parse_config
    from engine.campaign.runner import run_campaign
    from engine.datasets.specs import remove_spec

    cfg = {"dataset": "pets", "classifier": "pets-convnet", "seeds": 1, "target_class": 0,
           "strategy_params": {"generations": 1, "population": 4, "best_left": 2}}  # fmt: skip
    cid = run_campaign(parse_config(cfg), tmp_path / "home").campaign_id
    remove_spec("pets")
    at = app("campaign.py", id=cid)
    assert not at.exception
    assert "unknown dataset 'pets'" in at.error[0].value and "data add" in at.error[0].value
