"""Your own images: the imagefolder dataset, `latentfuzz data check|add|list`, class names
from a file, and campaigns refusing models trained on other data."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

import engine.core.home
from engine.campaign.config import parse_config
from engine.campaign.resolve import resolve
from engine.cli.main import app
from engine.core.errors import ConfigError
from engine.core.images import ImageSink, read_frame, read_uint8, to_pil
from engine.datasets import DatasetError, get_dataset
from engine.datasets.imagefolder import ImageFolder
from tests.tiny_data import CLASSES, save_tiny_models, write_folder


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_folder(tmp_path / "imgs")


@pytest.fixture(autouse=True)
def in_home(home: Path, monkeypatch) -> Path:
    """`home` as the process's home (user datasets, models and the decoded-image cache),
    restored afterwards."""
    monkeypatch.setattr(engine.core.home, "_current", home)
    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    return home


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def splits(ds: ImageFolder) -> dict[str, list[str]]:
    return {s: [p.name + str(p.parent) for p, _ in f] for s, f in ds.split_files().items()}


def test_pixels_size_channels_and_fit(tmp_path: Path):
    root = tmp_path / "d"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    wide = np.zeros((32, 64, 3), np.uint8)
    wide[:, :16] = (255, 0, 0)  # a red left quarter: outside the centre square
    Image.fromarray(wide).save(root / "a" / "wide.png")
    Image.fromarray(np.full((20, 20, 3), (0, 0, 255), np.uint8)).save(root / "b" / "1.jpg")
    Image.fromarray(np.full((20, 20, 3), (0, 0, 255), np.uint8)).save(root / "b" / "2.png")
    crop = ImageFolder(root, size=16, test_dir=root).load("train")
    stretch = ImageFolder(root, size=16, fit="stretch", test_dir=root).load("train")
    assert tuple(crop.images.shape) == (3, 3, 16, 16)
    assert float(crop.images[0, 0].max()) == 0.0  # no red left after the centre crop
    assert float(stretch.images[0, 0, :, :2].min()) == 1.0  # red stretched to 4 of 16 px
    assert crop.images[1:, 2].min() > 0.95 and crop.images[1:, :2].max() < 0.05  # blue
    grey = ImageFolder(root, size=8, channels=1, test_dir=root).load("test")
    assert tuple(grey.images.shape) == (3, 1, 8, 8)


def test_holdout_is_seeded_stratified_and_disjoint(folder: Path):
    a, b, c = ImageFolder(folder), ImageFolder(folder), ImageFolder(folder, split_seed=1)
    assert splits(a) == splits(b)
    assert splits(a)["test"] != splits(c)["test"]
    for ds in (a, c):
        s = splits(ds)
        assert not set(s["train"]) & set(s["test"])
        labels = [y for _, y in ds.split_files()["test"]]
        for k, name in enumerate(CLASSES):
            n = sum(
                p.suffix in (".png", ".jpg") and p.stat().st_size > 0
                for p in (folder / name).iterdir()
            )
            assert labels.count(k) == max(1, round(0.2 * n))


def test_given_test_folder_is_the_test_split(folder: Path, tmp_path: Path):
    test = write_folder(tmp_path / "test", per_class=2, seed=5, rejects=False)
    ds = ImageFolder(folder, test_dir=test)
    assert len(ds.load("test")) == 2 * len(CLASSES)
    assert len(ds.load("train")) == sum(ds.inspect(write_cache=False).counts["train"])
    # A folder holding just train/ and test/ gives both splits.
    both = tmp_path / "both"
    shutil.copytree(folder, both / "train")
    shutil.copytree(test, both / "test")
    assert splits(ImageFolder(both)) == splits(ImageFolder(both / "train", test_dir=both / "test"))
    (both / "classes.txt").write_text("Cat\nDog\nFox\n")
    assert ImageFolder(both).class_names == ("Cat", "Dog", "Fox")
    (test / "wolf").mkdir()
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(test / "wolf" / "w.png")
    with pytest.raises(DatasetError, match="wolf"):
        ImageFolder(folder, test_dir=test)


def test_fingerprint_follows_the_files_not_the_place(folder: Path, tmp_path: Path):
    before = ImageFolder(folder).fingerprint()
    moved = shutil.copytree(folder, tmp_path / "elsewhere")
    assert ImageFolder(moved).fingerprint() == before
    assert ImageFolder(folder, size=16).fingerprint() != before
    assert ImageFolder(folder, split_seed=3).fingerprint() != before
    Image.fromarray(np.zeros((32, 32, 3), np.uint8)).save(folder / "dog" / "new.png")
    assert ImageFolder(folder).fingerprint() != before


def test_class_names_from_a_file(folder: Path, tmp_path: Path):
    names = tmp_path / "names.txt"
    names.write_text("Felis\nCanis\nVulpes\n")
    assert ImageFolder(folder, class_names=("Felis", "Canis", "Vulpes")).class_names == (
        "Felis",
        "Canis",
        "Vulpes",
    )
    reordered = ImageFolder(folder, class_names=("fox", "cat", "dog"))
    assert reordered.folders == ("fox", "cat", "dog")
    y = reordered.load("test").labels.tolist()
    assert y == sorted(y) and reordered.split_files()["test"][0][0].parent.name == "fox"
    # classes.txt beside the class folders is read, and not rejected as a top-level file.
    (folder / "classes.txt").write_text("a\nb\nc\n")
    ds = ImageFolder(folder)
    assert ds.class_names == ("a", "b", "c")
    assert "classes.txt" not in {p.name for p, _ in ds.inspect(write_cache=False).rejected}
    out = cli("data", "check", str(folder), "--classes", str(names))
    assert out.exit_code == 0 and "Felis" in out.output
    names.write_text("one\ntwo\n")
    out = cli("data", "check", str(folder), "--classes", str(names))
    assert isinstance(out.exception, DatasetError)
    assert "names 2 classes" in str(out.exception) and "has 3" in str(out.exception)


def test_decoded_images_are_cached_by_fingerprint(folder: Path, in_home: Path, monkeypatch):
    first = ImageFolder(folder, name="pets").load("train")
    assert len(list((in_home / "cache" / "datasets").glob("pets-*.npz"))) == 1
    with monkeypatch.context() as m:
        m.setattr("engine.datasets.imagefolder.decode", lambda *a: 1 / 0)
        again = ImageFolder(folder, name="pets").load("train")
    assert (again.images == first.images).all() and (again.labels == first.labels).all()
    other = ImageFolder(folder, name="pets-2")  # another name: its own cache, kept
    other.load("test")
    Image.fromarray(np.zeros((32, 32, 3), np.uint8)).save(folder / "dog" / "new.png")
    changed = ImageFolder(folder, name="pets")
    changed.load("test")  # the earlier state's cache goes
    kept = sorted(p.name for p in (in_home / "cache" / "datasets").glob("*.npz"))
    assert kept == sorted(
        [
            f"pets-{changed.fingerprint()}.npz",
            f"pets-2-{other.fingerprint()}.npz",
        ]
    )


def write_cifar(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {b"data": rng.integers(0, 256, (4, 3072), dtype=np.uint8), b"labels": [0, 1, 2, 9]}
        (root / name).write_bytes(pickle.dumps(batch))
    return root


def test_reader_class_names_from_beside_the_data_or_a_spec(tmp_path: Path, in_home: Path):
    root = write_cifar(tmp_path / "cifar")
    assert get_dataset("cifar10", root).class_names[0] == "airplane"
    names = [f"c{i}" for i in range(10)]
    (root / "classes.txt").write_text("\n".join(names))
    assert get_dataset("cifar10", root).class_names == tuple(names)
    (root / "classes.txt").unlink()
    mine = tmp_path / "mine.txt"
    mine.write_text("\n".join(n.upper() for n in names))
    out = cli(
        "data",
        "add",
        "my-cifar",
        str(root),
        "--format",
        "cifar10",
        "--classes",
        str(mine),
        "--home",
        str(in_home),
    )
    assert out.exit_code == 0, out.output
    ds = get_dataset("my-cifar")
    assert ds.class_names[9] == "C9" and len(ds.load("test")) == 4
    mine.write_text("only\nthree\nnames\n")
    out = cli(
        "data",
        "add",
        "bad-cifar",
        str(root),
        "--format",
        "cifar10",
        "--classes",
        str(mine),
        "--home",
        str(in_home),
    )
    assert "names 3 classes" in str(out.exception) and "has 10" in str(out.exception)


def campaign(**kw):
    return parse_config(
        {
            "dataset": "pets",
            "seeds": 2,
            "target_class": 0,
            "seed": 3,
            "strategy_params": {"generations": 3, "population": 4, "best_left": 2},
            **kw,
        }
    )


def test_campaign_refuses_models_trained_on_other_data(folder: Path, in_home: Path):
    cli("data", "add", "pets", str(folder), "--home", str(in_home))
    ds = get_dataset("pets")
    models = in_home / "models"
    save_tiny_models(models, "pets", ds.shape, 3, fingerprint="0123456789abcdef")
    with pytest.raises(ConfigError) as e:
        resolve(campaign())
    msg = str(e.value)
    assert "0123456789abcdef" in msg and ds.fingerprint() in msg and "\n" not in msg
    assert "latentfuzz train vae --dataset pets" in msg
    # A model for other images: the shape names the fix.
    save_tiny_models(models, "pets", (1, 28, 28), 3, ds.fingerprint(), prefix="grey")
    with pytest.raises(ConfigError, match=r"shape \(1, 28, 28\).*latentfuzz train"):
        resolve(campaign(generator="grey-vae"))
    # A model of another dataset named explicitly: says which, and how to get one.
    with pytest.raises(ConfigError, match="trained on dataset 'mnist'.*--dataset pets"):
        resolve(campaign(classifier="mnist-convnet"))


def test_three_channel_images_are_written_and_read_back(tmp_path: Path):
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (3, 8, 8), dtype=np.uint8)
    assert to_pil(img).mode == "RGB" and to_pil(img[:1]).mode == "L"
    import torch

    sink = ImageSink(tmp_path)
    batch = torch.from_numpy(np.stack([img, img[::-1].copy()]))
    sink.save(["a.png", "b.png"], batch)
    sink.add_frames(["s.png", "s.png"], batch)
    sink.close()
    assert (read_uint8(tmp_path / "a.png") == img).all()
    assert (np.asarray(read_frame(tmp_path / "s.png", 1, 8)).transpose(2, 0, 1) == img[::-1]).all()


def test_three_channel_campaign_end_to_end(tmp_path: Path, in_home: Path):
    """`data add`, tiny models saved as a user's, a short campaign through the runner."""
    from engine.campaign.runner import run_campaign
    from store import Store
    from store import campaigns as sc

    folder = write_folder(tmp_path / "clean", per_class=10, rejects=False)  # 2 test/class
    assert cli("data", "add", "pets", str(folder), "--home", str(in_home)).exit_code == 0
    ds = get_dataset("pets")
    gen, clf = save_tiny_models(in_home / "models", "pets", ds.shape, 3, ds.fingerprint())
    res = run_campaign(campaign(), in_home)
    assert res.status == "finished"
    store = Store(in_home / "latentfuzz.duckdb")
    seeds = sc.seeds(store, res.campaign_id)
    assert len(seeds) == 2 and seeds["viable"].all()  # the classifier always says class 0
    assert (seeds["iterations"] == 3).all()
    for rel in (*seeds["seed_image"], *seeds["result_image"]):
        with Image.open(in_home / rel) as im:
            assert (im.mode, im.size) == ("RGB", (32, 32))
    c = sc.campaign(store, res.campaign_id)
    assert set(c["environment"]["model_sha256"]) == {gen, clf}


def test_imagenet_subset_fingerprint_covers_its_class_folders(tmp_path: Path):
    folder = tmp_path / "train" / "963"
    folder.mkdir(parents=True)
    empty = get_dataset("imagenet-pizza", tmp_path).fingerprint()
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(folder / "a.png")
    one = get_dataset("imagenet-pizza", tmp_path)
    assert [p.name for p in one.source_files()] == ["a.png"] and one.fingerprint() != empty


def test_sixteen_bit_images_are_scaled_not_saturated(tmp_path: Path):
    """Pillow's convert("L") clips 16-bit values at 255: a 0..65535 gradient read as 97%
    white (a walkthrough's finding). Float pixels, of no known range, are refused."""
    from engine.datasets.imagefolder import decode

    ramp = np.tile(np.linspace(0, 65535, 64).astype(np.uint16), (64, 1))
    Image.fromarray(ramp).save(tmp_path / "ramp.png")
    for channels in (1, 3):
        d = decode(tmp_path / "ramp.png", 32, channels)
        assert d.mode == "I;16" and d.array.shape == (channels, 32, 32)
        assert d.array.min() < 10 and d.array.max() > 245 and 120 < d.array.mean() < 135
    Image.fromarray(ramp.astype(np.float32)).save(tmp_path / "f.tif")
    assert "32-bit float pixels" in decode(tmp_path / "f.tif", 32, 1).why
