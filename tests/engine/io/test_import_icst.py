"""The ICST study's published result files (genai_tigs) import as they are: its CSV header,
its file names, its folders (evaluation_results/RQ2_RQ3_results/*.csv naming .npy images
under generated_images/<dataset>/<generator>/<run>/, where a copy of each CSV also lies),
and its pixels (VAE and SD in [0, 1], GAN in [-1, 1], ImageNet normalised by ImageNet's
mean and std, its VAE at 128 x 128). The files are written here, a few rows each."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from engine.cli.main import app
from engine.core.errors import ConfigError, LatentfuzzError
from engine.core.untrusted import UntrustedFileError
from engine.io.import_results import ResultsMapping, builtin_mapping, import_results
from store import Store
from store import campaigns as sc

#: The study's header, byte for byte.
HEADER = (
    "Filename,GeneratorName,run,Initial_perturbation,Perturbation_Size,ImageNumber,"
    "Iteration,Expected_label(X),Predicted_label(Y),Classification"
)
MEAN = np.array([0.485, 0.456, 0.406])[:, None, None]
STD = np.array([0.229, 0.224, 0.225])[:, None, None]


def study(
    root: Path, name: str, folder: str, images: list[np.ndarray], labels, summary: bool = False
) -> tuple[Path, Path]:
    """The study's layout under `root` for one run `name` (e.g. mnist_vae_high): the .npy
    images and a copy of the CSV in generated_images/`folder`, the CSV in
    evaluation_results/RQ2_RQ3_results. `labels` is one (X, Y, iteration) per image.
    `summary` ends the CSV with the line of means one of the study's files has."""
    gen, run = name.rsplit("_", 1)
    out = root / "generated_images" / folder
    out.mkdir(parents=True)
    lines = [HEADER]
    for n, (img, (x, y, it)) in enumerate(zip(images, labels, strict=True)):
        file = f"image_{n}_iteration{it}_X{x}_Y{y}.npy"
        np.save(out / file, img.astype(np.float32))
        verdict = "Misclassified" if x != y else "Classified"
        lines.append(
            f"{file},{gen},{run.title()},0.0146425576210022,0.0073212788105011,{n},{it},{x},{y},{verdict}"
        )
    if summary:
        lines.append(",,,,,,26.3764705882353,,,")
    text = "\r\n".join(lines) + "\r\n"
    (out / f"{name}.csv").write_text(text)
    rq = root / "evaluation_results" / "RQ2_RQ3_results"
    rq.mkdir(parents=True, exist_ok=True)
    (rq / f"{name}.csv").write_text(text)
    return rq / f"{name}.csv", out


def imported(tmp_path: Path, root: Path, dataset: str, csv_rel: str | None, images: str | None):
    """The campaign and seeds an import gives (the repository root with --csv/--images, or
    a generated_images folder alone when both are None)."""
    home = tmp_path / "home"
    store = Store(home / "latentfuzz.duckdb")
    m = builtin_mapping("giftbench")
    if csv_rel is not None:
        m = m.model_copy(update={"csv": csv_rel, "images": images})
    res = import_results(store, home, root, dataset, "icst", m, "giftbench")
    seeds = sc.seeds(store, res.campaign_id)
    return res, sc.campaign(store, res.campaign_id), seeds, home


def png(home: Path, rel: str) -> np.ndarray:
    a = np.asarray(Image.open(home / rel), dtype=np.int16)
    return a[None] if a.ndim == 2 else a.transpose(2, 0, 1)


# -- MNIST VAE high, from the study's results folder -------------------------------------


def test_the_mnist_vae_high_csv_imports_with_its_images_from_generated_images(tmp_path):
    rng = np.random.default_rng(0)
    images = [rng.random((1, 28, 28)) for _ in range(4)]
    labels = [(8, 5, 44), (5, 6, 67), (9, 9, 250), (1, 7, 3)]
    csv_path, folder = study(
        tmp_path / "r", "mnist_vae_high", "mnist/mnist_vae/mnist_vae_high", images, labels
    )
    rel = "generated_images/mnist/mnist_vae/mnist_vae_high"
    res, c, s, home = imported(
        tmp_path,
        tmp_path / "r",
        "mnist",
        "evaluation_results/RQ2_RQ3_results/mnist_vae_high.csv",
        rel,
    )
    # The study's own count: the rows its Classification calls Misclassified.
    with open(csv_path, newline="") as f:
        said = sum(r["Classification"] == "Misclassified" for r in csv.DictReader(f))
    assert res.rows == 4 and res.misclassified == said == 3 and res.kinds == {".npy [0, 1]": 4}
    assert c["preset"] == "high" and c["strategy"] == "ga" and c["generator"] == "icst"
    assert s["seed_label"].tolist() == [8, 5, 9, 1] and s["final_pred"].tolist() == [5, 6, 9, 7]
    assert s["status"].tolist() == ["misclassified", "misclassified", "survived", "misclassified"]
    assert s["iterations"].tolist() == [44, 67, 250, 3]
    params = json.loads(s["params"][0])
    assert params["run"] == "High" and params["classification"] == "Misclassified"
    assert params["generator"] == "mnist_vae" and params["image_number"] == 0
    assert params["perturbation_size"] == pytest.approx(0.0073212788105011)
    assert params["file"] == "image_0_iteration44_X8_Y5.npy"
    for i, img in enumerate(images):
        want = np.rint(img.astype(np.float32) * 255)
        assert np.abs(png(home, s["result_image"][i]) - want).max() <= 1


def test_the_csv_copy_beside_its_images_imports_from_that_folder_alone(tmp_path):
    rng = np.random.default_rng(1)
    _, folder = study(
        tmp_path / "r",
        "mnist_vae_low",
        "mnist/mnist_vae/mnist_vae_low",
        [rng.random((1, 28, 28)) for _ in range(2)],
        [(9, 9, 250), (1, 1, 250)],
    )
    res, c, s, _ = imported(tmp_path, folder, "mnist", None, None)
    assert (res.rows, res.misclassified, c["preset"]) == (2, 0, "low")
    assert s["status"].tolist() == ["survived", "survived"]


# -- every dataset and generator the study published -------------------------------------


def gan(rng, shape):  # tanh output: the background at -1
    return np.clip(rng.normal(-0.8, 0.5, shape), -1, 1)


def normalised(rng, side, overshoot=0.0):  # ImageNet's transform, as the study saved it
    return (rng.uniform(-overshoot, 1 + overshoot, (3, side, side)) - MEAN) / STD


RUNS = {
    # name: (dataset, folder, image maker, how the study's values become [0, 1], kind)
    "mnist_sd_low": (
        "mnist",
        "mnist/mnist_sd/mnist_sd_low",
        lambda r: r.random((28, 28)),
        lambda a: a,
        ".npy [0, 1]",
    ),
    "mnist_gan_high": (
        "mnist",
        "mnist/mnist_gan/mnist_gan_high",
        lambda r: gan(r, (1, 28, 28)),
        lambda a: (a + 1) / 2,
        ".npy [-1, 1]",
    ),
    "svhn_gan_low": (
        "svhn",
        "svhn/svhn_gan/svhn_gan_low",
        lambda r: gan(r, (3, 32, 32)),
        lambda a: (a + 1) / 2,
        ".npy [-1, 1]",
    ),
    "svhn_vae_high": (
        "svhn",
        "svhn/svhn_vae/svhn_vae_high",
        lambda r: r.random((3, 32, 32)),
        lambda a: a,
        ".npy [0, 1]",
    ),
    "cifar10_sd_high": (
        "cifar10",
        "cifar10/cifar10_sd/cifar10_sd_high",
        lambda r: r.random((3, 32, 32)),
        lambda a: a,
        ".npy [0, 1]",
    ),
    "Imagenetpizza_gan_high": (
        "imagenet-pizza",
        "Imagenet/IN-pizza/INPI_gan/INPI_gan_high",
        lambda r: normalised(r, 224),
        lambda a: a * STD + MEAN,
        ".npy ImageNet-normalised",
    ),
}


@pytest.mark.parametrize("name", RUNS)
def test_each_published_dataset_and_generator_imports_in_its_own_pixels(tmp_path, name):
    dataset, folder, make, to_unit, kind = RUNS[name]
    rng = np.random.default_rng(2)
    images = [make(rng) for _ in range(2)]
    x = 963 if dataset.startswith("imagenet") else 3
    study(tmp_path / "r", name, folder, images, [(x, x, 250), (x, 927 if x == 963 else 5, 12)])
    res, c, s, home = imported(
        tmp_path,
        tmp_path / "r",
        dataset,
        f"evaluation_results/RQ2_RQ3_results/{name}.csv",
        f"generated_images/{folder}",
    )
    assert res.kinds == {kind: 2} and res.misclassified == 1
    assert c["preset"] == name.rsplit("_", 1)[1]
    for i, img in enumerate(images):
        want = np.rint(np.clip(to_unit(img.astype(np.float32).astype(np.float64)), 0, 1) * 255)
        got = png(home, s["result_image"][i])
        assert got.shape == want.reshape(got.shape).shape
        assert np.abs(got - want.reshape(got.shape)).max() <= 1


def test_a_gan_image_without_a_negative_value_is_still_read_in_the_runs_scale(tmp_path):
    rng = np.random.default_rng(3)
    bright = np.full((1, 28, 28), 0.5)  # alone it would pass for [0, 1]: grey 128, not 191
    study(
        tmp_path / "r",
        "mnist_gan_low",
        "g",
        [gan(rng, (1, 28, 28)), bright],
        [(2, 2, 250), (0, 6, 9)],
    )
    res, _, s, home = imported(
        tmp_path, tmp_path / "r" / "generated_images" / "g", "mnist", None, None
    )
    assert res.kinds == {".npy [-1, 1]": 2}
    assert (png(home, s["result_image"][1]) == 191).all()  # (0.5 + 1) / 2 * 255


def test_imagenet_ids_a_vae_at_128_pixels_and_a_line_of_means_import(tmp_path):
    rng = np.random.default_rng(4)
    images = [normalised(rng, 128, overshoot=0.08) for _ in range(3)]  # unclamped decoder
    name, folder = "Imagenetteddy_vae_high", "Imagenet/IN_teddy/INTB_vae/INTB_vae_high"
    study(
        tmp_path / "r",
        name,
        folder,
        images,
        [(850, 153, 3), (850, 850, 250), (850, 865, 1)],
        summary=True,
    )
    res, c, s, home = imported(
        tmp_path,
        tmp_path / "r",
        "imagenet-teddy",
        f"evaluation_results/RQ2_RQ3_results/{name}.csv",
        f"generated_images/{folder}",
    )
    assert (res.rows, res.misclassified, res.skipped) == (3, 2, 1)
    assert res.kinds == {".npy ImageNet-normalised": 3}
    # 850 is teddy bear, the subset's one class; 153 and 865 are other ImageNet classes.
    assert s["seed_label"].tolist() == [0, 0, 0]
    assert s["final_pred"].isna().tolist() == [True, False, True] and s["final_pred"][1] == 0
    assert s["status"].tolist() == ["misclassified", "survived", "misclassified"]
    assert [json.loads(p).get("predicted_id") for p in s["params"]] == [153, None, 865]
    got = png(home, s["result_image"][0])
    assert got.shape == (3, 224, 224)  # resized as the ImageNet readers resize
    small = np.rint(np.clip(images[0].astype(np.float32) * STD + MEAN, 0, 1) * 255)
    up = Image.fromarray(small.transpose(1, 2, 0).astype(np.uint8)).resize(
        (224, 224), Image.Resampling.BICUBIC
    )
    assert np.abs(got - np.asarray(up, dtype=np.int16).transpose(2, 0, 1)).max() <= 1


# -- refusals: nothing written -----------------------------------------------------------


def refused(tmp_path: Path, root: Path, csv_rel: str, images: str) -> LatentfuzzError:
    home = tmp_path / "home"
    store = Store(home / "latentfuzz.duckdb")
    m = builtin_mapping("giftbench").model_copy(update={"csv": csv_rel, "images": images})
    with pytest.raises(LatentfuzzError) as e:
        import_results(store, home, root, "mnist", "icst", m)
    assert "\n" not in str(e.value)
    assert sc.list_campaigns(store).empty
    assert not (home / "campaigns").exists() or not any((home / "campaigns").iterdir())
    return e.value


def broken_study(tmp_path: Path, filename: str) -> tuple[Path, str, str]:
    """A study layout whose CSV's second row names `filename` instead of its image."""
    rng = np.random.default_rng(5)
    root = tmp_path / "r"
    csv_path, _ = study(
        root,
        "mnist_vae_high",
        "mnist/mnist_vae/mnist_vae_high",
        [rng.random((1, 28, 28))] * 2,
        [(8, 5, 44), (5, 6, 67)],
    )
    text = csv_path.read_text().replace("image_1_iteration67_X5_Y6.npy", filename)
    csv_path.write_text(text)
    return (
        root,
        "evaluation_results/RQ2_RQ3_results/mnist_vae_high.csv",
        "generated_images/mnist/mnist_vae/mnist_vae_high",
    )


def test_a_csv_naming_a_missing_npy_is_refused(tmp_path):
    e = refused(tmp_path, *broken_study(tmp_path, "image_1_iteration67_X5_Y7.npy"))
    assert isinstance(e, ConfigError) and "data row 2" in str(e)
    assert "'image_1_iteration67_X5_Y7.npy' not found in" in str(e)


@pytest.mark.parametrize("name", ["../../../../../secret.npy", "/etc/secret.npy", "out.npy"])
def test_a_csv_naming_an_npy_outside_its_image_folder_is_refused(tmp_path, name):
    outside = tmp_path / "secret.npy"
    np.save(outside, np.zeros((1, 28, 28), np.float32))
    root, csv_rel, images = broken_study(tmp_path, name.replace("/etc", str(tmp_path)))
    if name == "out.npy":  # a link in the image folder that leads out of the repository
        os.symlink(outside, root / images / "out.npy")
    e = refused(tmp_path, root, csv_rel, images)
    assert isinstance(e, UntrustedFileError) and "data row 2" in str(e) and "outside" in str(e)


def test_an_images_folder_outside_the_repository_is_refused(tmp_path):
    root, csv_rel, _ = broken_study(tmp_path, "image_1_iteration67_X5_Y6.npy")
    e = refused(tmp_path, root, csv_rel, "../elsewhere")
    assert isinstance(e, UntrustedFileError) and "'../elsewhere'" in str(e)


# -- the command line --------------------------------------------------------------------


def test_cli_imports_an_icst_csv_from_the_repository_and_refuses_a_bad_pixels(tmp_path):
    rng = np.random.default_rng(6)
    name, folder = "svhn_gan_high", "svhn/svhn_gan/svhn_gan_high"
    study(
        tmp_path / "r",
        name,
        folder,
        [gan(rng, (3, 32, 32))] * 2,
        [(8, 6, 12), (3, 7, 1)],
        summary=True,
    )
    args = [
        "import-results",
        str(tmp_path / "r"),
        "--csv",
        f"evaluation_results/RQ2_RQ3_results/{name}.csv",
        "--images",
        f"generated_images/{folder}",
        "--dataset",
        "svhn",
        "--generator-name",
        "icst-gan",
        "--home",
        str(tmp_path / "home"),
    ]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    # Words, not lines: the console wraps at its width (80 columns under pytest-xdist).
    said = " ".join(out.output.split())
    assert "imported 2 images (2 .npy [-1, 1])" in said and "2 misclassified" in said
    assert "skipped: 1" in said
    bad = CliRunner().invoke(app, [*args, "--pixels", "[0, 2]"])  # main() prints one line
    assert isinstance(bad.exception, ConfigError)
    assert str(bad.exception).startswith("--pixels '[0, 2]' is no pixel scale; expected one of")


def test_a_mapping_with_its_own_variants_and_pixels_is_read_from_yaml(tmp_path):
    rng = np.random.default_rng(7)
    study(
        tmp_path / "r", "mnist_gan_high", "g", [gan(rng, (1, 28, 28))] * 2, [(0, 2, 9), (2, 3, 8)]
    )
    folder = tmp_path / "r" / "generated_images" / "g"
    (tmp_path / "m.yaml").write_text(
        "image: picture\nexpected: truth\npredicted: guess\npixels: '[0, 1]'\n"
        "variants:\n  - image: Filename\n    expected: Expected_label(X)\n"
        "    predicted: Predicted_label(Y)\n"
    )
    m = ResultsMapping.from_yaml(tmp_path / "m.yaml")
    home = tmp_path / "home"
    store = Store(home / "latentfuzz.duckdb")
    # The mapping says [0, 1]: a GAN's negative values are refused, not read as [-1, 1].
    with pytest.raises(
        ConfigError,
        match=r"image_0_iteration9_X0_Y2\.npy: values in \[-1, .*\]; expected \[0, 1\] "
        r"\(the mapping's pixels\)",
    ):
        import_results(store, home, folder, "mnist", "icst", m)
    assert sc.list_campaigns(store).empty
    res = import_results(
        store, home, folder, "mnist", "icst", m.model_copy(update={"pixels": "[-1, 1]"})
    )
    assert res.kinds == {".npy [-1, 1]": 2} and res.misclassified == 2
