"""A study file names its images by path, and the Validity studies page shows them from
the home: a path that leaves the home (absolute, `..`, a symlink) is refused in one line
when the file is imported, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.cli.main import app
from engine.core.csv_io import to_csv
from engine.core.untrusted import UntrustedFileError
from engine.labelling.exchange import wide_export
from engine.labelling.importing import import_csv
from store import Store
from store import labels as ls
from tests.engine.labelling.test_exchange import study  # noqa: F401 (a labelled study)
from tests.engine.labelling.test_importing import ROWS, write_csv


def crowd_csv(path: Path, image: str) -> Path:
    """The ICST layout, its third image named `image`."""
    rows = [r if i != 2 else (image, *r[1:]) for i, r in enumerate(ROWS)]
    return write_csv(path, rows)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "secret.png").write_bytes(b"\x89PNG not yours")
    return home


@pytest.mark.parametrize(
    "image",
    [
        "/SECRET",  # absolute, replaced by the real path of a file outside the home
        "../secret.png",
        "u/../../secret.png",
        "https://example.org/../../../../secret.png",
    ],
)
def test_an_image_path_outside_the_home_is_refused_and_nothing_written(
    home: Path, tmp_path: Path, image: str
):
    image = image.replace("/SECRET", str(tmp_path / "secret.png"))
    store = Store(home / "latentfuzz.duckdb")
    with pytest.raises(UntrustedFileError) as e:
        import_csv(store, crowd_csv(tmp_path / "s.csv", image), "mnist")
    said = str(e.value)
    assert "\n" not in said and "Image URL of data row 3" in said and repr(image) in said
    assert "lies outside" in said and str(tmp_path / "s.csv") in said
    assert ls.validity_studies(store).empty


def test_an_image_symlinked_out_of_the_home_is_refused(home: Path, tmp_path: Path):
    (home / "u").mkdir()
    (home / "u" / "3.png").symlink_to(tmp_path / "secret.png")
    store = Store(home / "latentfuzz.duckdb")
    with pytest.raises(UntrustedFileError, match=r"Image URL of data row 3 .* 'u/3\.png'"):
        import_csv(store, crowd_csv(tmp_path / "s.csv", "u/3.png"), "mnist")
    assert ls.validity_studies(store).empty


def test_paths_inside_the_home_and_web_addresses_still_import(home: Path, tmp_path: Path):
    store = Store(home / "latentfuzz.duckdb")
    for image in ("u/3.png", "https://example.org/img/3.png", f"{home}/u/3.png"):
        res = import_csv(store, crowd_csv(tmp_path / "s.csv", image), "mnist", again=True)
        assert ls.items(store, res.study_id)["image"].iloc[2] == image  # stored as given


def test_a_mapping_names_its_image_column_in_the_refusal(home: Path, tmp_path: Path):
    from engine.labelling.importing import ImportMapping

    text = crowd_csv(tmp_path / "s.csv", "/etc/hostname").read_text()
    (tmp_path / "m.csv").write_text(text.replace("Image URL", "Picture", 1))
    with pytest.raises(UntrustedFileError, match=r"^Picture of data row 3 in .*'/etc/hostname'"):
        import_csv(
            Store(home / "latentfuzz.duckdb"),
            tmp_path / "m.csv",
            "mnist",
            ImportMapping(image="Picture"),
        )


def test_an_export_naming_a_file_outside_the_home_is_refused(study, home, tmp_path):  # noqa: F811
    store, sid = study
    wide = wide_export(store, sid)
    wide.loc[wide.index[1], "image"] = "../../../../../../etc/hostname"
    to_csv(wide, tmp_path / "wide.csv")
    other = Store(home / "latentfuzz.duckdb")
    with pytest.raises(UntrustedFileError, match=r"image of item 1 in .*wide\.csv is '\.\./"):
        import_csv(other, tmp_path / "wide.csv", "mnist")
    assert ls.validity_studies(other).empty


def test_the_cli_refuses_in_one_line(home: Path, tmp_path: Path):
    f = crowd_csv(tmp_path / "s.csv", "/etc/hostname")
    out = CliRunner().invoke(
        app, ["labels", "import", str(f), "--dataset", "mnist", "--home", str(home)]
    )
    assert isinstance(out.exception, UntrustedFileError), out.output
    assert "'/etc/hostname', which lies outside" in str(out.exception)
    assert ls.validity_studies(Store(home / "latentfuzz.duckdb")).empty


def test_a_study_file_named_in_another_encoding_imports(home: Path, tmp_path: Path):
    """A CSV from a Latin-1 disk: its name is the study's, which the store holds as text
    (it crashed the insert)."""
    import os

    f = Path(os.fsdecode(os.fsencode(tmp_path) + b"/\xe9tude.csv"))
    store = Store(home / "latentfuzz.duckdb")
    res = import_csv(store, write_csv(f), "mnist")
    study = ls.validity_studies(store).set_index("id").loc[res.study_id]
    assert study["name"] == "\\xe9tude.csv"
