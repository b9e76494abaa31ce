"""Training commands, one short epoch each into a scratch zoo (slow: `make test-slow`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.models import zoo
from engine.train.settings import TrainSettings

pytestmark = pytest.mark.slow


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    # Generators are measured with the default classifier, so the scratch zoo needs one.
    shutil.copytree(zoo.models_dir() / "mnist-convnet", tmp_path / "mnist-convnet")
    return tmp_path


def check_generator_card(card: dict, family: str) -> None:
    assert card["family"] == family and card["kind"] == "generator"
    assert card["training"]["seed"] == 0 and card["training"]["command"].startswith("latentfuzz")
    lo, hi = card["latent_bounds"]
    assert lo < 0 < hi and card["latent_range"] == pytest.approx(hi - lo)
    assert card["step_presets"]["high"] == pytest.approx(card["latent_range"] * 1e-3)
    assert 0.0 <= card["metrics"]["viability"] <= 1.0
    assert card["inference"]["ms_per_image_b25"] > 0


def test_train_classifier(scratch: Path):
    from engine.train.classifier import train_classifier

    settings = TrainSettings("mnist", epochs=1, batch_size=64, name="t-lenet", out=scratch)
    card = train_classifier(settings, architecture="lenet5")
    assert card["metrics"]["test_accuracy"] > 0.5 and card["dtype"] == "float16"
    zoo.load_classifier("t-lenet", "mnist", root=scratch)


def test_train_vae(scratch: Path):
    from engine.train.vae import train_vae

    settings = TrainSettings("mnist", epochs=1, batch_size=128, name="t-vae", out=scratch)
    check_generator_card(train_vae(settings, hidden=64, latent=8), "vae")


def test_train_gan(scratch: Path):
    from engine.train.gan import train_gan

    card = train_gan(TrainSettings("mnist", 1, 64, name="t-gan", out=scratch), width=16)
    check_generator_card(card, "gan")
    assert zoo.load_generator("t-gan", root=scratch).discriminator is not None


def test_train_dm(scratch: Path):
    from engine.train.dm import train_dm

    settings = TrainSettings("mnist", epochs=1, batch_size=64, name="t-dm", out=scratch)
    card = train_dm(settings, channels=(8, 8), steps=2)
    check_generator_card(card, "dm")
    assert card["params"]["sample_side"] == 14 and card["latent_shape"] == [1, 14, 14]
