"""`latentfuzz train` on any dataset shape, through the CLI, then a campaign on the result.

Tiny datasets are written in each reader's format (tests/helpers.py): CIFAR-10 batches and
SVHN .mat at 3x32x32, MNIST IDX at 1x28x28, two classes told apart by colour and a band.
Models are tiny (widths 4 to 8) and train for one epoch of 5 steps. One 3-channel run
stays in the default suite (classifier + convolutional VAE + campaign); the other
families and formats are slow.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from engine.cli.main import app
from engine.models import zoo
from engine.train.loop import TrainRun
from store import Store
from store import campaigns as sc
from store import metrics as sm
from tests.helpers import write_cifar10, write_mnist_idx, write_svhn

TINY = {
    "classifier": ["--width", "4"],
    "vae": ["--width", "4", "--latent", "8"],
    "gan": ["--width", "4", "--latent", "8"],
    "dm": ["--channels", "8,8", "--resolution", "16", "--steps", "2"],
}
#: 1x28x28 trains the bundled MNIST architectures, which have other size options.
TINY_28 = {
    "classifier": [],
    "vae": ["--hidden", "32", "--latent", "8"],
    "gan": ["--width", "8", "--latent", "8"],
    "dm": ["--channels", "8,8", "--steps", "2"],
}


@pytest.fixture(autouse=True)
def _process_home(monkeypatch):
    """`--home` makes its folder the process's home (engine/core/home.py); put it back after."""
    import engine.core.home

    monkeypatch.setattr(engine.core.home, "_current", engine.core.home._current)


def cli(*args: str) -> str:
    """Run `latentfuzz ARGS` in this process; its output, or a failure with the output."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        res = CliRunner().invoke(app, list(args))
    finally:
        for s, h in before.items():  # `run` installs its own Ctrl-C and SIGTERM handlers
            signal.signal(s, h)
    assert res.exit_code == 0, f"latentfuzz {' '.join(args)}\n{res.output}\n{res.exception!r}"
    return res.output


def fails(*args: str) -> str:
    """Run a command that must fail with a one-line error; returns the message."""
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code != 0
    assert res.exception is not None and not isinstance(res.exception, SystemExit)
    msg = str(res.exception)
    assert "\n" not in msg
    return msg


def train(kind: str, dataset: str, data: Path | None, home: Path, *extra: str) -> dict:
    """Train a tiny model through the CLI; returns the card it wrote. `data`: the files'
    folder (None for a dataset added with `data add`, which knows its folder)."""
    from engine.datasets import get_dataset

    where = [] if data is None else ["--data-dir", str(data)]
    tiny = TINY_28 if get_dataset(dataset, data).shape == (1, 28, 28) else TINY
    cli(
        "train",
        kind,
        "--dataset",
        dataset,
        *where,
        "--home",
        str(home),
        "--epochs",
        "1",
        "--batch-size",
        "8",
        *tiny[kind],
        *extra,
    )
    newest = max((home / "models").glob(f"*/{zoo.CARD}"), key=lambda p: p.stat().st_mtime_ns)
    return json.loads(newest.read_text())


def campaign(
    dataset: str, data: Path | None, home: Path, generator: str, classifier: str, *extra: str
) -> str:
    """Run a short campaign through `latentfuzz run`; returns its id."""
    before = {p.name for p in (home / "campaigns").glob("*")}
    where = [] if data is None else ["--data-dir", str(data)]
    cli(
        "run",
        "--dataset",
        dataset,
        *where,
        "--generator",
        generator,
        "--classifier",
        classifier,
        "--seeds",
        "3",
        "--generations",
        "3",
        "--population",
        "6",
        "--best-left",
        "2",
        "--perturbation",
        "custom",
        "--step",
        "0.5",
        "--quiet",
        "--home",
        str(home),
        *extra,
    )
    (cid,) = {p.name for p in (home / "campaigns").glob("*")} - before
    return cid


def check_card(card: dict, data_fingerprint: str, shape: list[int]) -> None:
    assert card["dataset_fingerprint"] == data_fingerprint
    assert card["image_shape"] == shape
    t = card["training"]
    assert t["device"] == "cpu" and t["interrupted"] is False
    assert t["epochs_done"] == 1 and t["steps_done"] == 5  # 40 images, batches of 8


def check_campaign(home: Path, cid: str, shape: list[int], test_images: int = 16) -> None:
    store = Store(home / "latentfuzz.duckdb")
    row = sc.campaign(store, cid)
    assert row["status"] == "finished"
    assert row["environment"]["device"] == "cpu"
    m = sm.metrics(store, cid)
    assert m is not None and len(m["test_gaps"]) == test_images  # over the test split
    assert sc.summary(store, cid)["seeds_total"] == 3
    seeds = sc.seeds(store, cid)
    pngs = sorted((home / "campaigns" / cid).rglob("*.png"))
    assert len(seeds) == 3 and pngs
    mode = "RGB" if shape[0] == 3 else "L"
    for p in pngs:
        with Image.open(p) as im:
            assert (im.mode, im.height) == (mode, shape[1])


@pytest.fixture
def cifar(tmp_path: Path) -> Path:
    return write_cifar10(tmp_path / "cifar")


def test_cifar10_classifier_and_convvae_then_a_campaign(cifar: Path, home: Path):
    from engine.datasets import get_dataset

    fp = get_dataset("cifar10", cifar).fingerprint()  # before any read: the same
    clf = train("classifier", "cifar10", cifar, home)
    assert clf["name"] == "cifar10-vgg" and clf["architecture"] == "vgg" and clf["default"]
    check_card(clf, fp, [3, 32, 32])
    vae = train("vae", "cifar10", cifar, home)
    assert vae["family"] == "convvae" and vae["latent_shape"] == [8]
    check_card(vae, fp, [3, 32, 32])
    # Measured on the tiny test split with the classifier just trained (the default).
    assert vae["metrics"]["viability_classifier"] == "cifar10-vgg"
    assert vae["metrics"]["viability_seeds"] == 16
    cid = campaign("cifar10", cifar, home, "cifar10-vae", "cifar10-vgg")
    check_campaign(home, cid, [3, 32, 32])


def test_ctrl_c_keeps_the_last_step(cifar: Path, home: Path, monkeypatch):
    def interrupt_at_step_7(run: TrainRun) -> None:
        if run.steps_done == 7:
            signal.raise_signal(signal.SIGINT)  # a real Ctrl-C, handled before this returns

    monkeypatch.setattr(TrainRun, "on_step", interrupt_at_step_7)
    before = signal.getsignal(signal.SIGINT)
    out = cli(
        "train",
        "classifier",
        "--dataset",
        "cifar10",
        "--data-dir",
        str(cifar),
        "--home",
        str(home),
        "--epochs",
        "3",
        "--batch-size",
        "8",
        "--width",
        "4",
    )
    assert signal.getsignal(signal.SIGINT) is before  # the handler is put back
    card = json.loads((home / "models" / "cifar10-vgg" / zoo.CARD).read_text())
    t = card["training"]
    assert t["interrupted"] is True and t["epochs"] == 3
    assert (t["epochs_done"], t["steps_done"]) == (1, 7)
    assert "interrupted after 1 of 3 epochs" in out
    # What was kept loads and classifies like any model.
    zoo.load_classifier("cifar10-vgg", "cifar10", root=home / "models")


def test_refusals(cifar: Path, home: Path):
    msg = fails("train", "vae", "--home", str(home), "--epochs", "1")  # mnist-vae is bundled
    assert "mnist-vae" in msg and "bundled" in msg and "--name" in msg
    msg = fails(
        "train",
        "classifier",
        "--dataset",
        "cifar10",
        "--data-dir",
        str(cifar),
        "--device",
        "cuda",
        "--home",
        str(home),
    )
    assert "--device cuda" in msg and "--device cpu" in msg
    msg = fails(
        "train",
        "vae",
        "--dataset",
        "cifar10",
        "--data-dir",
        str(cifar),
        "--family",
        "convvae",
        "--hidden",
        "10",
        "--home",
        str(home),
    )
    assert "--hidden does not apply to convvae" in msg
    msg = fails(
        "train",
        "dm",
        "--dataset",
        "cifar10",
        "--data-dir",
        str(cifar),
        "--resolution",
        "10",
        "--home",
        str(home),
    )
    assert "--resolution 10" in msg and "divisible by 4" in msg
    assert not (home / "models").exists() or not any((home / "models").iterdir())


def test_shapes_refused_with_the_sides_that_work():
    from engine.core.errors import ConfigError
    from engine.generators import GENERATORS

    for shape, why in (
        ((3, 32, 28), "not square"),
        ((3, 30, 30), "side 30"),
        ((3, 12, 12), "side 12"),
        ((5, 32, 32), "5 channels"),
    ):
        with pytest.raises(ConfigError, match=why):
            GENERATORS.get("dcgan")(shape, 10)


def test_defaults_follow_the_shape_and_the_bench_takes_the_gpu(monkeypatch):
    import torch

    from engine.bench.campaign import bench_device
    from engine.train.common import default_architecture

    kinds = ("classifier", "vae", "gan", "dm")
    legacy = [default_architecture(k, (1, 28, 28)) for k in kinds]
    assert legacy == ["convnet", "vae", "gan", "dm"]  # the bundled zoo's own
    generic = [default_architecture(k, (3, 32, 32)) for k in kinds]
    assert generic == ["vgg", "convvae", "dcgan", "dm"]
    assert bench_device(None) == ("cuda" if torch.cuda.is_available() else "cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert bench_device(None) == "cuda" and bench_device("cpu") == "cpu"


def check_discriminator(name: str, ds, home: Path) -> None:
    """The discriminator filter calibrates on the real images and scores generated ones."""
    import torch

    from engine.core.images import to_uint8
    from engine.validators.discriminator import DiscriminatorFilter

    gen = zoo.load_generator(name, root=home / "models")
    f = DiscriminatorFilter(gen, ds)
    assert 0.0 < f.threshold < 1.0
    y = torch.arange(6) % 2
    images = to_uint8(gen.decode(gen.sample_prior(6, torch.Generator().manual_seed(0)), y))
    scores = f.score(images, y)
    assert scores.shape == (6,) and bool(((scores >= 0) & (scores <= 1)).all())


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["cifar10", "svhn", "mnist-idx"])
def test_every_family_on_every_format(fmt: str, tmp_path: Path, home: Path):
    """Classifier, VAE, GAN and DM on one format each, then a campaign per generator; the
    GAN's campaign also scores with its discriminator (the `discriminator` validity filter)."""
    from engine.datasets import get_dataset

    writer = {"cifar10": write_cifar10, "svhn": write_svhn, "mnist-idx": write_mnist_idx}[fmt]
    data = writer(tmp_path / fmt)
    ds = get_dataset(fmt, data)
    shape = list(ds.shape)
    clf = train("classifier", fmt, data, home)
    legacy = shape == [1, 28, 28]
    assert clf["architecture"] == ("convnet" if legacy else "vgg")
    check_card(clf, ds.fingerprint(), shape)
    families = (
        {"vae": "vae", "gan": "gan", "dm": "dm"}
        if legacy
        else {"vae": "convvae", "gan": "dcgan", "dm": "dm"}
    )
    for kind, family in families.items():
        card = train(kind, fmt, data, home)
        assert card["family"] == family and card["name"] == f"{fmt}-{kind}"
        check_card(card, ds.fingerprint(), shape)
        assert card["latent_bounds"][0] < card["latent_bounds"][1]
        validator = ["--validator", "discriminator"] if kind == "gan" else []
        cid = campaign(fmt, data, home, card["name"], clf["name"], *validator)
        check_campaign(home, cid, shape)
        if validator:
            store = Store(home / "latentfuzz.duckdb")
            assert sc.campaign(store, cid)["config"]["validators"] == {"discriminator": None}
            check_discriminator(card["name"], ds, home)


@pytest.mark.slow
def test_resnet_and_a_dcgan_interrupted(cifar: Path, home: Path, monkeypatch):
    card = train("classifier", "cifar10", cifar, home, "--architecture", "resnet")
    assert card["architecture"] == "resnet" and card["params"]["width"] == 4
    monkeypatch.setattr(
        TrainRun, "on_step", lambda run: run.steps_done == 2 and signal.raise_signal(signal.SIGINT)
    )
    gan = train("gan", "cifar10", cifar, home)
    assert gan["family"] == "dcgan" and gan["training"]["interrupted"] is True
    assert gan["training"]["steps_done"] == 2 and gan["training"]["epochs_done"] == 0
    # Measured all the same: a campaign can use what was kept.
    assert gan["latent_range"] > 0 and gan["metrics"]["viability"] is not None
    assert np.isfinite(gan["inference"]["ms_per_image_b1"])


@pytest.mark.slow
def test_an_image_folder_added_with_data_add(tmp_path: Path, home: Path):
    """The imagefolder dataset (3 classes of 32x32 PNG and JPEG): a VGG and a DCGAN, then
    a campaign, with the dataset's folder known from `data add`."""
    from engine.datasets import get_dataset
    from tests.tiny_data import write_folder

    folder = write_folder(tmp_path / "imgs", per_class=14, rejects=False)
    cli("data", "add", "pets", str(folder), "--home", str(home))
    ds = get_dataset("pets")
    clf = train("classifier", "pets", None, home)
    gan = train("gan", "pets", None, home)
    assert (clf["architecture"], gan["family"]) == ("vgg", "dcgan")
    for card in (clf, gan):
        assert card["dataset_fingerprint"] == ds.fingerprint()
        assert card["image_shape"] == [3, 32, 32]
    assert gan["metrics"]["viability_classifier"] == "pets-vgg"
    cid = campaign("pets", None, home, "pets-gan", "pets-vgg")
    check_campaign(home, cid, [3, 32, 32], len(ds.load("test")))
