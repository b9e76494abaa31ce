"""Importing other tools' results: a GIFTbench-format folder becomes an imported campaign,
is labelled in a validity study, reported by `labels report` and shown on every page."""

from __future__ import annotations

import csv
import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from dashboard.text import md_text
from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.cli import labels as cli_labels
from engine.cli.main import app
from engine.core.errors import ConfigError
from engine.io.import_results import ResultsMapping, builtin_mapping, import_results
from engine.labelling.agreement import INVALID
from engine.labelling.statistics import report
from engine.labelling.validity import StudyConfig, create_study
from store import Store, judging
from store import campaigns as sc
from store import labels as ls
from store import metrics as sm
from tests.helpers import page_opener

HEADER = [
    "File Name",
    "Generator",
    "Run",
    "Initial Perturbation",
    "Perturbation Size",
    "Image Number",
    "Iteration",
    "Expected",
    "Predicted",
    "Classification",
]
GEN = "giftbench-vae"


def rng_images(seed: int = 0) -> dict[str, np.ndarray]:
    """Six MNIST-shaped images in every form GIFTbench folders hold: floats in [0, 1]
    (H x W and 1 x H x W), floats and uint8 in [0, 255], and PNGs."""
    rng = np.random.default_rng(seed)
    return {
        "a.npy": rng.random((28, 28)),
        "b.npy": rng.random((1, 28, 28)).astype(np.float32),
        "c.npy": rng.integers(0, 256, (28, 28)).astype(np.uint8),
        "d.npy": (rng.random((28, 28)) * 255).astype(np.float32),
        "e.png": rng.integers(0, 256, (28, 28)).astype(np.uint8),
        "f.png": rng.integers(0, 256, (28, 28)).astype(np.uint8),
    }


#: (file, expected, predicted, iteration): four failures, two survivors at the budget.
ROWS = [
    ("a.npy", 3, 5, 12),
    ("b.npy", 7, 1, 40),
    ("c.npy", 0, 6, 3),
    ("d.npy", 9, 4, 77),
    ("e.png", 2, 2, 250),
    ("f.png", 1, 1, 250),
]


def write_folder(folder: Path, images: dict[str, np.ndarray], rows=ROWS, header=HEADER) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, arr in images.items():
        if name.endswith(".npy"):
            np.save(folder / name, arr)
        else:
            Image.fromarray(arr).save(folder / name)
    with open(folder / "results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for i, (name, exp, pred, it) in enumerate(rows):
            w.writerow(
                [
                    name,
                    "VAE",
                    1,
                    0.0024,
                    0.0012,
                    i,
                    it,
                    exp,
                    pred,
                    "misclassified" if exp != pred else "correct",
                ]
            )
    return folder


def as_uint8(arr: np.ndarray) -> np.ndarray:
    """What the import should store: [0, 1] floats scaled, [0, 255] rounded."""
    a = np.asarray(arr, dtype=np.float64).reshape(28, 28)
    return np.rint(a * 255 if arr.dtype.kind == "f" and a.max() <= 1 else a).astype(np.uint8)


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """A home with a tiny native campaign and a labelled imported one."""
    root = tmp_path_factory.mktemp("import")
    home = root / "home"
    native = run_campaign(
        parse_config({"seeds": 3, "seed": 1, "strategy_params": {"generations": 4}}), home
    )
    images = rng_images()
    store = Store(home / "latentfuzz.duckdb")
    res = import_results(
        store,
        home,
        write_folder(root / "gb", images),
        "mnist",
        GEN,
        builtin_mapping("giftbench"),
        "giftbench",
    )
    sid = create_study(store, home, StudyConfig(campaigns=[res.campaign_id], gold_rate=0))
    # Two labellers through the labelling functions: both keep every label, except that
    # the second calls one image invalid (so its validity is undecided under ICST rules).
    for who in ("ann", "bob"):
        judging.join(store, sid, who)
        while (item := judging.next_item(store, sid, who)) is not None:
            expected = int(ls.items(store, sid).set_index("item_id").loc[item, "expected"])
            answer = INVALID if who == "bob" and expected == 0 else expected
            judging.answer(store, sid, item, who, answer, datetime.now())
    return home, store, res, native.campaign_id, sid, images


def test_giftbench_folder_becomes_an_imported_campaign(imported):
    home, store, res, native, _, images = imported
    cid = res.campaign_id
    assert res.rows == 6 and res.misclassified == 4
    assert res.kinds == {".npy [0, 1]": 2, ".npy [0, 255]": 2, ".png": 2}
    c = sc.campaign(store, cid)
    assert (c["kind"], c["generator"], c["status"], c["preset"]) == (
        "imported",
        GEN,
        "finished",
        "0.0012",
    )
    assert sc.campaign(store, native)["kind"] == "native"  # the default
    s = sc.seeds(store, cid)
    assert s["seed_label"].tolist() == [r[1] for r in ROWS]
    assert s["final_pred"].tolist() == [r[2] for r in ROWS]
    assert s["iterations"].tolist() == [r[3] for r in ROWS]
    assert s["status"].tolist() == ["misclassified"] * 4 + ["survived"] * 2
    assert s["seed_image"].isna().all()
    p = s["params"].map(json.loads)
    assert p[0]["perturbation_size"] == 0.0012 and p[0]["initial_perturbation"] == 0.0024
    assert [x["image_number"] for x in p] == list(range(6))
    for r in s.itertuples():  # every image copied as a PNG with the pixels it had
        png = np.asarray(Image.open(home / r.result_image))
        assert np.array_equal(png, as_uint8(images[ROWS[r.seed_idx][0]]))
    assert sc.generations(store, cid).empty
    assert sm.metrics(store, cid) is None


def test_imported_campaign_is_labelled_and_reported(imported, monkeypatch):
    home, store, res, _, sid, _ = imported
    t = report(store, sid).set_index(["generator", "preset"])
    assert t.loc[(GEN, "0.0012"), ["n", "valid", "preserved"]].tolist() == [4, 3, 3]
    monkeypatch.setattr(cli_labels.console, "width", 200)
    out = CliRunner().invoke(app, ["labels", "report", sid, "--home", str(home)])
    assert out.exit_code == 0, out.output
    row = next(ln for ln in out.output.splitlines() if GEN in ln)
    cells = [c.strip() for c in row.split("│")[1:-1]]
    # generator, perturbation, n, valid #, valid %, CI, preserved #, preserved %, CI
    assert cells[:5] + cells[6:8] == [GEN, "0.0012", "4", "3", "75.0", "3", "100.0"]


def test_a_custom_mapping_reads_another_tools_columns(tmp_path):
    header = ["img", "truth", "guess", "gens", "step", "seed_img"]
    folder = tmp_path / "other"
    (folder / "pics").mkdir(parents=True)
    rng = np.random.default_rng(1)
    for i in range(3):
        np.save(folder / "pics" / f"x{i}.npy", rng.random((28, 28, 1)))  # H x W x C
    np.save(folder / "pics" / "s0.npy", np.full((28, 28), 255, np.uint8))
    with open(folder / "out.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(
            [
                ["x0", "3", "8", "5", "0.1", "s0.npy"],
                ["x1", "7", "7", "9", "0.1", ""],
                ["x2", "1", "2", "", "0.1", ""],
            ]
        )
    (tmp_path / "m.yaml").write_text(
        "csv: out.csv\nimages: pics\nimage: img\nexpected: truth\npredicted: guess\n"
        "iteration: gens\nseed_image: seed_img\nparams:\n  step: step\n"
        "constants:\n  strategy: sinvad-like\n  classifier: their-cnn\n  preset: high\n"
    )
    m = ResultsMapping.from_yaml(tmp_path / "m.yaml")
    store = Store(tmp_path / "home" / "latentfuzz.duckdb")
    res = import_results(store, tmp_path / "home", folder, "mnist", "their-gan", m)
    c = sc.campaign(store, res.campaign_id)
    assert (c["strategy"], c["classifier"], c["preset"]) == ("sinvad-like", "their-cnn", "high")
    s = sc.seeds(store, res.campaign_id)
    assert s["seed_label"].tolist() == [3, 7, 1] and s["final_pred"].tolist() == [8, 7, 2]
    assert s["iterations"].isna().tolist() == [False, False, True]
    assert res.kinds == {".npy [0, 1]": 3, ".npy [0, 255]": 1}
    home = tmp_path / "home"
    assert s["seed_image"].notna().tolist() == [True, False, False]
    assert (np.asarray(Image.open(home / s["seed_image"][0])) == 255).all()
    assert s["params"].map(lambda x: json.loads(x)["step"]).tolist() == [0.1] * 3


def _bad(folder: Path, case: str) -> Path:
    images = rng_images()
    rows, header = ROWS, HEADER
    if case == "range":
        images["a.npy"] = images["a.npy"] * 2 - 1  # a GAN's [-1, 1]
    elif case == "shape":
        images["c.npy"] = np.zeros((32, 32, 3), np.uint8)
    elif case == "column":
        header = [h if h != "Expected" else "Label" for h in HEADER]
    elif case == "file":
        rows = [*ROWS, ("gone.npy", 1, 2, 3)]
    return write_folder(folder, images, rows, header)


@pytest.mark.parametrize(
    "case, message",
    [
        # One GAN image among [0, 1] and [0, 255] ones: no one scale fits the run.
        (
            "range",
            r"a\.npy: values in \[-.*\], but d\.npy holds \[.*\]; expected one scale for "
            r"every image of a run",
        ),
        ("shape", r"c\.npy: shape 32x32x3; expected 1x28x28"),
        (
            "column",
            r"columns \['Expected'\] not found; the file has \[.*'Label'.*\], the mapping "
            r"expects",
        ),
        ("file", r"data row 7: image file 'gone\.npy' not found in"),
    ],
)
def test_bad_input_is_refused_with_its_own_message_and_nothing_is_written(tmp_path, case, message):
    home = tmp_path / "home"
    store = Store(home / "latentfuzz.duckdb")
    with pytest.raises(ConfigError, match=message) as e:
        import_results(
            store, home, _bad(tmp_path / "gb", case), "mnist", GEN, builtin_mapping("giftbench")
        )
    assert "\n" not in str(e.value)
    assert sc.list_campaigns(store).empty
    assert not (home / "campaigns").exists() or not any((home / "campaigns").iterdir())


def test_cli_imports_and_refuses_in_one_line(tmp_path):
    home, runner = tmp_path / "home", CliRunner()
    folder = write_folder(tmp_path / "gb", rng_images())
    args = [
        "import-results",
        str(folder),
        "--dataset",
        "mnist",
        "--generator-name",
        GEN,
        "--home",
        str(home),
    ]
    out = runner.invoke(app, [*args, "--preset", "high", "--name", "past study"])
    assert out.exit_code == 0, out.output
    assert "imported 6 images" in out.output and "4 misclassified, 2 survived" in out.output
    c = sc.list_campaigns(Store(home / "latentfuzz.duckdb")).iloc[0]
    assert (c["name"], c["preset"], c["kind"]) == ("past study", "high", "imported")
    out = runner.invoke(app, [*args, "--format", "nope"])  # main() prints it as one line
    assert isinstance(out.exception, ConfigError)
    assert "unknown format 'nope'; built in: giftbench" in str(out.exception)


# --------------------------------------------------------------------------------- pages


@pytest.fixture
def page(imported, monkeypatch):
    return page_opener(imported[0], monkeypatch)


def test_campaign_page_says_an_imported_campaign_has_no_generations(page, imported):
    at = page("campaign.py", id=imported[2].campaign_id)
    assert not at.exception
    assert any("Imported from another tool's results" in i.value for i in at.info)
    assert not at.get("vega_lite_chart")  # no empty convergence chart
    assert [m.label for m in at.metric][:2] == ["viable seeds", "misclassified"]
    assert len(at.get("image")) >= 4  # the gallery shows the copied images
    at = page("campaign.py", id=imported[2].campaign_id, tab="Seed detail")
    assert not at.exception
    assert any("final prediction **5**, 12 iterations" in m.value for m in at.markdown)
    assert len(at.get("image")) == 1 and not at.get("vega_lite_chart")  # no top-2 history


def test_compare_page_shows_an_imported_campaign_beside_a_native_one(page, imported):
    _, _, res, native, _, _ = imported
    at = page("compare.py")
    at.multiselect[0].set_value([native, res.campaign_id]).run()
    assert not at.exception
    text = "\n".join(m.value for m in at.markdown)
    name, gen = md_text(f"{GEN} (imported)"), md_text(GEN)  # as the tables escape them
    row = next(ln for ln in text.splitlines() if ln.startswith(f"| {name} | {gen} |"))
    cells = [c.replace("**", "").strip() for c in row.split("|")[3:-1]]
    icst = np.mean([r[3] for r in ROWS])  # survivors counted at the budget
    to_fail = np.mean([r[3] for r in ROWS if r[1] != r[2]])
    # viable %, misclassified % (#), ICST iterations, to failure, validity, preservation
    assert [cells[0], cells[1], cells[2].split()[0], cells[3].split()[0], cells[4], cells[5]] == [
        "100",
        "67 (4)",
        f"{icst:.1f}",
        f"{to_fail:.1f}",
        "75 (3)",
        "100 (3)",
    ]
    metrics = next(m.value for m in at.markdown if "failures / 1k evals" in m.value)
    assert f"| {name} | ga | — | —" in metrics  # no search evaluations to measure


# New campaign and Models read no campaign rows: an imported one cannot change them.
@pytest.mark.parametrize("name", ["campaigns.py", "studies.py", "label.py"])
def test_every_other_page_opens_with_an_imported_campaign(page, name):
    assert not page(name).exception
