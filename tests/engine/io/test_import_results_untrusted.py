"""`latentfuzz import-results` on folders from elsewhere: every file its globs and mapping
reach lies inside the results folder, declared sizes are bounded before anything is
allocated, and odd values or file names end in one line, with nothing written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from engine.cli.main import app
from engine.core.errors import LatentfuzzError
from engine.core.untrusted import UntrustedFileError
from engine.io.import_results import ResultsMapping, builtin_mapping, import_results
from store import Store
from store import campaigns as sc
from tests.crafted_files import npy_header_only, png_bomb
from tests.engine.io.test_import_results import GEN, ROWS, rng_images, write_folder


def refused(tmp_path: Path, folder: Path, mapping: ResultsMapping | None = None) -> str:
    """The one-line message an import of `folder` is refused with; checks that the store
    and the home's campaigns folder stay empty."""
    home = tmp_path / "home"
    store = Store(home / "latentfuzz.duckdb")
    with pytest.raises(LatentfuzzError) as e:
        import_results(store, home, folder, "mnist", GEN, mapping or builtin_mapping("giftbench"))
    assert "\n" not in str(e.value)
    assert sc.list_campaigns(store).empty
    assert not (home / "campaigns").exists() or not any((home / "campaigns").iterdir())
    return str(e.value)


def mapping(tmp_path: Path, **changes: str) -> ResultsMapping:
    return builtin_mapping("giftbench").model_copy(update=changes)


# -- paths: every file reached lies inside the results folder ----------------------------


def test_an_image_symlinked_out_of_the_folder_is_refused(tmp_path: Path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    np.save(outside / "secret.npy", rng_images()["a.npy"])  # a readable image: it imported
    folder = write_folder(tmp_path / "gb", rng_images())
    (folder / "a.npy").unlink()
    (folder / "a.npy").symlink_to(outside / "secret.npy")
    said = refused(tmp_path, folder)
    assert "image file" in said and "'a.npy'" in said and "lies outside" in said


def test_a_results_csv_symlinked_out_of_the_folder_is_refused(tmp_path: Path):
    other = write_folder(tmp_path / "other", rng_images())
    folder = tmp_path / "gb"
    folder.mkdir()
    (folder / "results.csv").symlink_to(other / "results.csv")
    for name in rng_images():
        (folder / name).symlink_to(other / name)
    said = refused(tmp_path, folder)
    assert "results file" in said and "results.csv" in said and "lies outside" in said


def test_a_mapping_whose_images_folder_is_outside_is_refused(tmp_path: Path):
    write_folder(tmp_path / "outside", rng_images())  # images it would read
    folder = write_folder(tmp_path / "gb", {})
    said = refused(tmp_path, folder, mapping(tmp_path, images="../outside"))
    assert "images" in said and "'../outside'" in said and "lies outside" in said
    said = refused(tmp_path, folder, mapping(tmp_path, images=str(tmp_path / "outside")))
    assert "lies outside" in said


@pytest.mark.parametrize("pattern", ["../other/*.csv", "/abs/*.csv", "sub/../../other/*.csv"])
def test_a_mapping_whose_csv_glob_leaves_the_folder_is_refused(tmp_path: Path, pattern: str):
    write_folder(tmp_path / "other", rng_images())
    folder = write_folder(tmp_path / "gb", rng_images())
    (folder / "sub").mkdir()
    pattern = pattern.replace("/abs", str(tmp_path / "other"))
    said = refused(tmp_path, folder, mapping(tmp_path, csv=pattern))
    assert "csv" in said and repr(pattern) in said


@pytest.mark.parametrize("name", ["/etc/hostname", "../../etc/hostname", "sub/../../x.npy"])
def test_an_image_name_that_leaves_the_folder_is_refused(tmp_path: Path, name: str):
    folder = write_folder(tmp_path / "gb", rng_images(), [*ROWS, (name, 1, 2, 3)])
    said = refused(tmp_path, folder)
    assert repr(name) in said


# -- sizes and values: bounded before anything is allocated ------------------------------


@pytest.mark.parametrize("value", ["inf", "-inf", "1e400", "nan", "2.5", "-3", "1e12"])
def test_an_iteration_that_is_no_count_is_refused(tmp_path: Path, value: str):
    folder = write_folder(tmp_path / "gb", rng_images(), [*ROWS[:-1], ("f.png", 1, 1, value)])
    said = refused(tmp_path, folder)
    assert "data row 6" in said and "Iteration" in said and repr(value) in said


def test_a_npy_declaring_a_huge_shape_is_refused_from_its_header(tmp_path: Path):
    folder = write_folder(tmp_path / "gb", rng_images())
    npy_header_only(folder / "a.npy", (100_000, 100_000))  # 74.5 GiB of float64 if loaded
    said = refused(tmp_path, folder)
    assert "a.npy" in said and "100000x100000" in said and "expected 1x28x28" in said


def test_a_png_declaring_60000_squared_pixels_is_refused_before_decoding(tmp_path: Path):
    folder = write_folder(tmp_path / "gb", rng_images())
    png_bomb(folder / "e.png")
    said = refused(tmp_path, folder)
    assert "e.png" in said and "3,600,000,000 pixels" in said


# -- file names that are not UTF-8 --------------------------------------------------------


def fs(path: Path, tail: bytes) -> Path:
    """`path` / a name made of raw bytes (a Latin-1 file system's names, on this one)."""
    return Path(os.fsdecode(os.fsencode(path) + b"/" + tail))


def test_a_folder_and_csv_with_non_utf8_names_import_and_say_so(tmp_path: Path):
    folder = write_folder(fs(tmp_path, b"r\xe9sultats"), rng_images())
    (folder / "results.csv").rename(fs(folder, b"r\xe9sultats.csv"))
    home = tmp_path / "home"
    store = Store(home / "latentfuzz.duckdb")
    res = import_results(store, home, folder, "mnist", GEN, builtin_mapping("giftbench"))
    c = sc.campaign(store, res.campaign_id)
    assert c["config"]["source"].endswith("r\\xe9sultats")  # the bytes, readable
    assert json.loads(sc.seeds(store, res.campaign_id)["params"][0])["csv"] == ("r\\xe9sultats.csv")


def test_the_cli_imports_from_a_non_utf8_folder_with_a_non_utf8_mapping(tmp_path: Path):
    folder = write_folder(fs(tmp_path, b"\xff"), rng_images())
    m = fs(tmp_path, b"m\xff.yaml")
    m.write_text((Path(__file__).parents[3] / "engine/io/formats/giftbench.yaml").read_text())
    home = tmp_path / "home"
    args = ["import-results", str(folder), "--dataset", "mnist", "--generator-name", GEN]
    out = CliRunner().invoke(app, [*args, "--mapping", str(m), "--home", str(home)])
    assert out.exit_code == 0, out.output
    assert "imported 6 images" in out.output


def test_nothing_is_left_half_written_when_an_outside_path_is_found_late(tmp_path: Path):
    """The last row points outside: refused before the first image is copied."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    np.save(outside / "z.npy", rng_images()["a.npy"])
    folder = write_folder(tmp_path / "gb", rng_images(), [*ROWS, ("z.npy", 1, 2, 3)])
    (folder / "z.npy").symlink_to(outside / "z.npy")
    with pytest.raises(UntrustedFileError):
        import_results(
            Store(tmp_path / "home" / "latentfuzz.duckdb"),
            tmp_path / "home",
            folder,
            "mnist",
            GEN,
            builtin_mapping("giftbench"),
        )
    campaigns = tmp_path / "home" / "campaigns"
    assert not campaigns.exists() or not any(campaigns.iterdir())
