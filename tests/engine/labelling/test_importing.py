"""Importing an external study: the common crowd-study CSV header, our verdicts, the report."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from engine.cli import labels as cli_labels
from engine.cli.main import app
from engine.core.errors import ConfigError
from engine.labelling.agreement import INVALID, OTHER
from engine.labelling.importing import ImportMapping, import_csv
from engine.labelling.statistics import report
from store import Store
from store import labels as ls
from tests.helpers import CLI

HEADER = (
    "Image URL,ID,DATASET,TOOL,MUT_EXT,ITER,Expected,Predicted,ASS 1,ASS 2,Misclass Human 1,"
    "Misclass Human 2,Valid Human 1,Valid Human 2,Validity?,Label Preservation?,"
)  # the trailing comma: an empty last column, as spreadsheets export it
ROWS = [
    # url, id, dataset, tool, mut, iter, expected, predicted, ass1, ass2, validity?, pres?
    ("u/1.png", "1", "MNIST", "VAE", "low", "12", "7", "1", "7", "7", "Yes", "Yes"),
    (
        "u/2.png",
        "2",
        "MNIST",
        "VAE",
        "low",
        "30",
        "7",
        "9",
        "Not a Digit",
        "not a digit",
        "No",
        "N/A",
    ),
    ("u/3.png", "3", "MNIST", "VAE", "low", "4", "7", "1", "7", "1", "Yes", "N/A"),
    ("u/4.png", "4", "MNIST", "VAE", "high", "2", "3", "5", "3", "3", "Yes", "Yes"),
    ("u/5.png", "5", "MNIST", "VAE", "high", "3", "3", "5", "5", "5", "Yes", "No"),
    ("u/6.png", "6", "MNIST", "GAN", "high", "8", "2", "0", "2", "", "N/A", "N/A"),
    ("u/7.png", "7", "MNIST", "GAN", "high", "5", "4", "9", "Not a Digit", "4", "N/A", "N/A"),
    ("u/8.png", "8", "MNIST", "GAN", "high", "6", "8", "3", "8", "8", "No", "Yes"),
    # One says invalid, one names another class: the study's files say preservation "no".
    ("u/9.png", "9", "MNIST", "GAN", "high", "7", "6", "5", "Not a Digit", "5", "N/A", "no"),
]


def write_csv(path: Path, rows=ROWS, trailing_comma: bool = True) -> Path:
    """The study's layout; its MNIST and INPI files end every line with a comma, INTB not."""
    lines = [HEADER if trailing_comma else HEADER.rstrip(",")]
    for url, id_, ds, tool, mut, it, exp, pred, a1, a2, val, pres in rows:
        lines.append(
            ",".join(
                [
                    url,
                    id_,
                    ds,
                    tool,
                    mut,
                    it,
                    exp,
                    pred,
                    a1,
                    a2,
                    "",
                    "",
                    "",
                    "",
                    val,
                    pres,
                    *([""] if trailing_comma else []),
                ]
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def test_import_recomputes_verdicts_and_reports_per_generator_and_perturbation(tmp_path):
    store = Store(tmp_path / "db.duckdb")
    res = import_csv(store, write_csv(tmp_path / "study.csv"), "mnist")
    assert (res.rows, res.judgements, res.empty_cells) == (9, 17, 1)
    j = ls.judgements(store, res.study_id)
    assert set(j["labeller"]) == {"ASS 1", "ASS 2"}
    assert (j.loc[j["raw"].str.lower() == "not a digit", "answer"] == -1).all()
    # Our rules say row 8 is valid (both name a class); the file says No: reported.
    assert res.disagreements[["ID", "column"]].values.tolist() == [["8", "Validity?"]]
    t = report(store, res.study_id).set_index(["generator", "preset"])
    cols = ["n", "valid", "valid_pct", "preserved", "preserved_pct"]
    assert t.loc[("VAE", "low"), cols].tolist() == pytest.approx([3, 2, 200 / 3, 1, 50])
    assert t.loc[("VAE", "high"), cols].tolist() == pytest.approx([2, 2, 100, 1, 50])
    # Row 6 has one empty answer: not complete, not counted. Row 9 is undecided validity.
    assert t.loc[("GAN", "high"), cols].tolist() == pytest.approx([3, 1, 100 / 3, 1, 100])
    # Rows 7 and 9 (not a digit, and a digit) are undecided validity; row 3 is valid (7
    # and 1 are both digits) with its preservation undecided (7 against 1).
    assert t["undecided_validity"].tolist() == [2, 0, 0]
    assert t["undecided_preservation"].tolist() == [0, 0, 1]


def test_cli_import_and_report(tmp_path, monkeypatch):
    monkeypatch.setattr(cli_labels.console, "width", 200)  # a wide terminal: no cut cells
    home = tmp_path / "home"
    runner = CliRunner()
    out = runner.invoke(
        app,
        [
            "labels",
            "import",
            str(write_csv(tmp_path / "s.csv")),
            "--dataset",
            "mnist",
            "--home",
            str(home),
        ],
    )
    assert out.exit_code == 0, out.output
    assert "imported 9 images and 17 answers" in out.output
    assert "1 verdicts in the file differ from ours" in out.output
    out = runner.invoke(app, ["labels", "report", "--home", str(home)])
    assert out.exit_code == 0, out.output
    lines = [ln for ln in out.output.splitlines() if "VAE" in ln or "GAN" in ln]
    cells = [[c.strip() for c in ln.split("│")[1:-1]] for ln in lines]
    # generator, perturbation, n, valid #, valid %, CI, preserved #, preserved %, CI
    assert [c[:5] + c[6:8] for c in cells] == [
        ["GAN", "high", "3", "1", "33.3", "1", "100.0"],
        ["VAE", "high", "2", "2", "100.0", "1", "50.0"],
        ["VAE", "low", "3", "2", "66.7", "1", "50.0"],
    ]
    for c in cells:
        lo, hi = map(float, c[5].split("-"))
        assert lo <= float(c[4]) <= hi
    # Counted in no column above: said under the table (the page showed them, it did not).
    assert (
        "undecided (in no # above): the validity of 2 images, the label preservation "
        "of 1 valid image;"
    ) in " ".join(out.output.split())


def test_unknown_answer_text_is_refused_with_the_row_and_nothing_is_written(tmp_path):
    store = Store(tmp_path / "db.duckdb")
    rows = [*ROWS[:2], ("u/9.png", "9", "MNIST", "DM", "low", "3", "1", "2", "blurry", "1", "", "")]
    with pytest.raises(ConfigError, match=r"data row 3 \(ID '9'\): answer 'blurry'.*--mapping"):
        import_csv(store, write_csv(tmp_path / "bad.csv", rows), "mnist")
    assert ls.validity_studies(store).empty
    mapping = ImportMapping(invalid_texts=["blurry"])
    res = import_csv(store, write_csv(tmp_path / "bad.csv", rows), "mnist", mapping)
    assert ls.judgements(store, res.study_id)["answer"].tolist().count(-1) == 3


def test_two_rows_of_one_id_or_a_word_for_a_number_are_refused_by_row(tmp_path):
    # Two rows of ID 1 were imported as two images; "abc" under ITER gave Python's
    # "could not convert string to float", naming no column.
    store = Store(tmp_path / "db.duckdb")
    twice = [*ROWS[:3], ROWS[0]]
    with pytest.raises(ConfigError, match=r"data rows 1 and 4 have the same ID '1'; give each"):
        import_csv(store, write_csv(tmp_path / "twice.csv", twice), "mnist")
    word = [ROWS[0], ("u/2.png", "2", "MNIST", "VAE", "low", "abc", "7", "9", "7", "7", "", "")]
    with pytest.raises(ConfigError, match=r"data row 2 \(ID '2'\): ITER 'abc' is not a number"):
        import_csv(store, write_csv(tmp_path / "word.csv", word), "mnist")
    assert ls.validity_studies(store).empty


def test_missing_columns_are_named(tmp_path):
    p = tmp_path / "x.csv"
    pd.DataFrame({"a": [1]}).to_csv(p, index=False)
    with pytest.raises(ConfigError, match=r"columns \['Image URL'.*the file has \['a'\]"):
        import_csv(Store(), p, "mnist")


# The ICST ImageNet studies: answers are ImageNet ids, "not a real world object" (invalid)
# or "a different real world object" (valid, another class).
IMAGENET_ROWS = [
    # url, id, dataset, tool, mut, iter, expected, predicted, ass1, ass2, validity?, pres?
    ("p1", "1", "INPI", "gan", "high", "61", "963", "942", "963", "963", "yes", "yes"),
    (
        "p2",
        "2",
        "INPI",
        "gan",
        "high",
        "9",
        "963",
        "725",
        "not a real world object",
        "923",
        "N/A",
        "no",
    ),
    (
        "p3",
        "3",
        "INPI",
        "gan",
        "high",
        "28",
        "963",
        "925",
        "a different real world object",
        "930",
        "yes",
        "no",
    ),
    (
        "p4",
        "4",
        "INPI",
        "sd",
        "high",
        "5",
        "963",
        "964",
        "a different real world object",
        "963",
        "yes",
        "N/A",
    ),
    (
        "p5",
        "5",
        "INPI",
        "sd",
        "low",
        "1",
        "963",
        "892",
        "not a real world object",
        "not a real world object",
        "no",
        "N/A",
    ),
    (
        "p6",
        "6",
        "INPI",
        "sd",
        "low",
        "33",
        "963",
        "933",
        "not a real world object",
        "a different real world object",
        "N/A",
        "no",
    ),
    ("p7", "7", "INPI", "vae", "low", "40", "963", "121", "963", "", "N/A", "N/A"),
]


def write_imagenet_csv(path: Path, rows=IMAGENET_ROWS) -> Path:
    return write_csv(path, rows, trailing_comma=False)


def test_imagenet_subset_study_imports_with_no_disagreement(tmp_path):
    store = Store(tmp_path / "db.duckdb")
    res = import_csv(store, write_imagenet_csv(tmp_path / "inpi.csv"), "imagenet-pizza")
    assert (res.rows, res.judgements, res.empty_cells) == (7, 13, 1)
    assert res.disagreements.empty  # the file's own verdicts are exactly ours
    j = ls.judgements(store, res.study_id).set_index("raw")["answer"]
    assert j["963"].eq(0).all()  # ImageNet 963 is class 0 (pizza) of this subset
    assert j["a different real world object"].eq(OTHER).all() and j["923"] == OTHER
    assert j["not a real world object"].eq(INVALID).all()
    t = report(store, res.study_id).set_index(["generator", "preset"])
    cols = ["n", "valid", "preserved"]
    assert t.loc[("gan", "high"), cols].tolist() == [3, 2, 1]
    assert t.loc[("sd", "low"), cols].tolist() == [2, 0, 0]
    assert ("vae", "low") not in t.index  # its only image lacks an answer


def test_imagenet_answers_outside_the_taxonomy_are_refused(tmp_path):
    rows = [("p1", "1", "INPI", "gan", "high", "1", "963", "942", "963", "1200", "", "")]
    with pytest.raises(ConfigError, match=r"answer '1200' is neither a class of imagenet-pizza"):
        import_csv(Store(), write_imagenet_csv(tmp_path / "x.csv", rows), "imagenet-pizza")
    rows = [("p1", "1", "INPI", "gan", "high", "1", "850", "942", "963", "963", "", "")]
    with pytest.raises(ConfigError, match=r"expected label '850' is not a class of imagenet"):
        import_csv(Store(), write_imagenet_csv(tmp_path / "x.csv", rows), "imagenet-pizza")


def test_unknown_dataset_is_one_line_listing_the_known_ones(tmp_path):
    out = subprocess.run(
        [
            *CLI,
            "labels",
            "import",
            str(write_imagenet_csv(tmp_path / "s.csv")),
            "--dataset",
            "imagenet",
            "--home",
            str(tmp_path / "home"),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert "unknown dataset 'imagenet'" in out.stderr and "imagenet-pizza" in out.stderr
    assert (
        not (tmp_path / "home" / "latentfuzz.duckdb").exists()
        or ls.validity_studies(Store(tmp_path / "home" / "latentfuzz.duckdb")).empty
    )


def test_a_mapping_file_with_an_unknown_key_or_bad_yaml_is_refused(tmp_path):
    """A misspelt key (`imagez`) was ignored, and the import went on with the default
    column; an unclosed bracket was a parser traceback."""
    typo = tmp_path / "m.yaml"
    typo.write_text("imagez: Picture\n")
    with pytest.raises(ConfigError, match=r"unknown keys \['imagez'\]; its keys are image, id"):
        ImportMapping.from_yaml(typo)
    bad = tmp_path / "b.yaml"
    bad.write_text("image: [Picture\n")
    with pytest.raises(ConfigError, match="is not valid YAML at line 2"):
        ImportMapping.from_yaml(bad)
    good = tmp_path / "g.yaml"
    good.write_text("image: Picture\n")
    assert ImportMapping.from_yaml(good).image == "Picture"


def test_the_same_file_imported_twice_is_refused_unless_again(tmp_path):
    """Importing a file twice made two studies of it, and every report pooling studies
    counted its answers twice."""
    store = Store(tmp_path / "db.duckdb")
    first = import_csv(store, write_csv(tmp_path / "study.csv"), "mnist")
    copy = write_csv(tmp_path / "renamed copy.csv")  # same bytes, another name
    with pytest.raises(ConfigError, match=rf"imported already.*study {first.study_id}.*--again"):
        import_csv(store, copy, "mnist")
    assert len(ls.validity_studies(store)) == 1
    # Another mapping or dataset, or other bytes, is another import.
    other = write_csv(tmp_path / "other.csv", ROWS[:-1])
    assert import_csv(store, other, "mnist").study_id != first.study_id
    again = import_csv(store, copy, "mnist", again=True)
    assert again.study_id != first.study_id and len(ls.validity_studies(store)) == 3
    env = {"LATENTFUZZ_HOME": str(tmp_path / "h"), "PATH": "/usr/bin:/bin"}
    run = [*CLI, "labels", "import", str(copy), "--dataset", "mnist"]
    assert subprocess.run(run, env=env, capture_output=True).returncode == 0
    p = subprocess.run(run, env=env, capture_output=True, text=True)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert "imported already" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert subprocess.run([*run, "--again"], env=env, capture_output=True).returncode == 0
