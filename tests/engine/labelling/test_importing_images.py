"""`labels import --images`: the ICST study's rows linked to its .npy images in the layout
of deeptestai/genai_tigs (generated_images/mnist/mnist_<tool>/mnist_<tool>_<ext>/
image_<N>_iteration<I>_X<E>_Y<P>.npy), converted to PNGs in the home; ambiguous and
missing rows listed, bad trees and files refused in one line with nothing written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from engine.cli.main import app
from engine.core.errors import LatentfuzzError
from engine.labelling.importing import import_csv
from store import Store
from store import labels as ls
from tests.engine.labelling.test_importing import write_csv

rng = np.random.default_rng(0)
VAE = rng.random((1, 28, 28), dtype=np.float32)  # [0, 1], saved as (1, 28, 28)
GAN = rng.random((1, 28, 28), dtype=np.float32) * 2 - 1  # tanh output in [-1, 1]
SD = rng.random((28, 28), dtype=np.float32)  # the diffusion runs save (28, 28)


def npy(root: Path, tool: str, ext: str, name: str, a: np.ndarray, **kw) -> Path:
    folder = root / f"mnist_{tool}" / f"mnist_{tool}_{ext}"
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / name, a, **kw)
    return folder / name


def row(id_: str, tool: str, ext: str, it: int, x: int, y: int, a1="3", a2="3"):
    """A data row as the study's CSV has it: the Image URL carries the same five values."""
    url = f"{id_}_MNST_{tool}_{ext}_iteration{it}_X{x}_Y{y}"
    return (url, id_, "MNST", tool, ext, str(it), str(x), str(y), a1, a2, "yes", "yes")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "genai_tigs" / "generated_images" / "mnist"
    npy(root, "vae", "high", "image_0_iteration44_X3_Y5.npy", VAE)
    npy(root, "gan", "high", "image_7_iteration12_X3_Y8.npy", GAN)
    npy(root, "sd", "low", "image_2_iteration93_X1_Y4.npy", SD)
    # Two seeds of one run that failed alike: one key, two files.
    npy(root, "sd", "high", "image_34_iteration1_X7_Y2.npy", SD)
    npy(root, "sd", "high", "image_38_iteration1_X7_Y2.npy", 1 - SD)
    # What the repository keeps beside the arrays.
    (root / "mnist_sd" / "mnist_sd_high" / "mnist_sd_high.csv").write_text("Filename\n")
    return root


ROWS = [
    row("320", "vae", "high", 44, 3, 5),
    row("11", "gan", "high", 12, 3, 8),
    row("102", "sd", "low", 93, 1, 4, "1", "1"),
    row("82", "sd", "high", 1, 7, 2, "7", "7"),  # ambiguous
    row("5", "vae", "low", 250, 3, 9),  # missing
]


def png(home: Path, rel: str) -> np.ndarray:
    return np.asarray(Image.open(home / rel))


def test_rows_link_to_their_images_converted_to_pngs_in_the_home(home, tmp_path, tree):
    store = Store(home / "latentfuzz.duckdb")
    res = import_csv(store, write_csv(tmp_path / "s.csv", ROWS), "mnist", home=home, images=tree)
    items = ls.items(store, res.study_id).set_index("external_id")
    assert res.rows == 5 and sorted(res.images.linked) == [0, 1, 2]
    for id_, a in (("320", VAE[0]), ("11", (GAN[0] + 1) / 2), ("102", SD)):
        rel = items.loc[id_, "image"]
        assert rel.startswith(f"studies/{res.study_id}/") and rel.endswith(".png")
        # The GAN's [-1, 1] read as such, not clipped: its dark half kept its shades.
        np.testing.assert_array_equal(png(home, rel), np.round(a * 255).astype(np.uint8))
    assert res.images.ranges == {
        "mnist_gan/mnist_gan_high": "[-1, 1]",
        "mnist_sd/mnist_sd_low": "[0, 1]",
        "mnist_vae/mnist_vae_high": "[0, 1]",
    }
    # The answers and verdicts are the import's as before.
    assert res.judgements == 10


def test_ambiguous_and_missing_rows_are_said_per_row_and_get_no_image(home, tmp_path, tree):
    store = Store(home / "latentfuzz.duckdb")
    res = import_csv(store, write_csv(tmp_path / "s.csv", ROWS), "mnist", home=home, images=tree)
    assert sorted(res.images.ambiguous) == [3] and res.images.missing == [4]
    assert "3 of 5 rows linked" in res.images.summary()
    assert "1 ambiguous" in res.images.summary() and "1 missing" in res.images.summary()
    lines = res.images.details()
    assert (
        "ID 82: ambiguous, mnist_sd/mnist_sd_high/image_34_iteration1_X7_Y2.npy, "
        "mnist_sd/mnist_sd_high/image_38_iteration1_X7_Y2.npy"
    ) in lines
    assert "ID 5: missing" in lines
    items = ls.items(store, res.study_id).set_index("external_id")
    assert items.loc["82", "image"] == ROWS[3][0]  # the file's own name, no guess
    assert len(list((home / "studies" / res.study_id).iterdir())) == 3


def test_the_cli_prints_the_summary_and_with_verbose_the_rows(home, tmp_path, tree):
    f = write_csv(tmp_path / "s.csv", ROWS)
    args = ["labels", "import", str(f), "--dataset", "mnist", "--images", str(tree)]
    r = CliRunner().invoke(app, [*args, "--home", str(home)])
    assert r.exit_code == 0, r.output
    assert "images: 3 of 5 rows linked" in r.output and "--verbose lists them" in r.output
    assert "ID 82: ambiguous" not in r.output
    r = CliRunner().invoke(app, [*args, "--again", "--verbose", "--home", str(home)])
    assert "ID 82: ambiguous" in r.output and "ID 5: missing" in r.output


def _refused(home: Path, tmp_path: Path, images: Path, rows=ROWS) -> str:
    """The refusal's message, after checking that nothing was written."""
    store = Store(home / "latentfuzz.duckdb")
    with pytest.raises(LatentfuzzError) as e:
        import_csv(store, write_csv(tmp_path / "s.csv", rows), "mnist", home=home, images=images)
    assert ls.validity_studies(store).empty
    assert not (home / "studies").exists() or not any((home / "studies").iterdir())
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_a_folder_that_is_no_genai_tigs_tree_is_refused(home, tmp_path):
    flat = tmp_path / "pngs"
    flat.mkdir()
    np.save(flat / "image_0_iteration44_X3_Y5.npy", VAE)  # right name, no run folders
    assert "holds no file laid out as" in _refused(home, tmp_path, flat)
    assert "is no folder" in _refused(home, tmp_path, tmp_path / "nowhere")


def test_a_pickle_bearing_npy_is_refused_without_unpickling(home, tmp_path, tree):
    class Boom:
        def __reduce__(self):
            return (Path("/tmp/real-pwned").touch, ())

    a = np.array([Boom()], dtype=object)
    npy(tree, "vae", "high", "image_0_iteration44_X3_Y5.npy", a, allow_pickle=True)
    msg = _refused(home, tmp_path, tree)
    assert "Python objects" in msg and "image_0_iteration44_X3_Y5.npy" in msg
    assert not Path("/tmp/real-pwned").exists()


@pytest.mark.parametrize(
    ("array", "said"),
    [
        (np.zeros((3, 32, 32), np.float32), "has shape (3, 32, 32)"),  # an SVHN image
        (np.zeros((1, 28, 28), np.complex64), "holds complex64 values"),
        (np.array(["a"] * 784).reshape(1, 28, 28), "holds <U1 values"),
        (np.full((1, 28, 28), 1000.0, np.float32), "pixels in [1000, 1000]"),
        (np.full((1, 28, 28), np.nan, np.float32), "NaN"),
    ],
)
def test_an_npy_with_an_unexpected_shape_dtype_or_range_is_refused(
    home, tmp_path, tree, array, said
):
    npy(tree, "gan", "high", "image_7_iteration12_X3_Y8.npy", array)
    assert said in _refused(home, tmp_path, tree)


def test_a_header_declaring_a_huge_array_is_refused_before_reading(home, tmp_path, tree):
    f = tree / "mnist_vae" / "mnist_vae_high" / "image_0_iteration44_X3_Y5.npy"
    with open(f, "wb") as out:  # 40 GB declared, 16 bytes there
        header = {"descr": "<f4", "fortran_order": False, "shape": (100_000, 100_000)}
        np.lib.format.write_array_header_1_0(out, header)
        out.write(b"\0" * 16)
    assert "has shape (100000, 100000)" in _refused(home, tmp_path, tree)


def test_an_image_symlinked_out_of_the_tree_is_refused(home, tmp_path, tree):
    secret = tmp_path / "secret.npy"
    np.save(secret, VAE)
    f = tree / "mnist_vae" / "mnist_vae_high" / "image_0_iteration44_X3_Y5.npy"
    f.unlink()
    f.symlink_to(secret)
    assert "lies outside" in _refused(home, tmp_path, tree)


def test_the_cli_refuses_in_one_line(home, tmp_path):
    f = write_csv(tmp_path / "s.csv", ROWS)
    r = CliRunner().invoke(
        app,
        ["labels", "import", str(f), "--dataset", "mnist", "--images", str(tmp_path)]
        + ["--home", str(home)],
    )
    # main() prints a LatentfuzzError as `error: ...` with exit 2 (tests/engine/cli).
    assert isinstance(r.exception, LatentfuzzError), r.output
    assert "holds no file laid out as" in str(r.exception) and "\n" not in str(r.exception)
    assert ls.validity_studies(Store(home / "latentfuzz.duckdb")).empty


def test_the_pngs_of_a_study_the_store_refuses_are_removed(home, tmp_path, tree, monkeypatch):
    def refuse(*_a, **_k):
        raise RuntimeError("the store refused the study")

    monkeypatch.setattr(ls, "create_validity_study", refuse)
    with pytest.raises(RuntimeError):
        import_csv(
            Store(home / "latentfuzz.duckdb"),
            write_csv(tmp_path / "s.csv", ROWS),
            "mnist",
            home=home,
            images=tree,
        )
    assert not any((home / "studies").iterdir())


def test_a_latentfuzz_export_with_images_is_refused(home, tmp_path, tree):
    f = tmp_path / "wide.csv"
    f.write_text(
        "item_id,kind,generator,preset,image,expected,answer 1\n"
        "0,result,mnist-vae,high,campaigns/c/seed_0000/result.png,3,3\n"
    )
    with pytest.raises(LatentfuzzError, match="drop --images"):
        import_csv(Store(home / "latentfuzz.duckdb"), f, "mnist", home=home, images=tree)
    assert ls.validity_studies(Store(home / "latentfuzz.duckdb")).empty
