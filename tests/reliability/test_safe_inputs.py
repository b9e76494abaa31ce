"""Safe inputs: pickle bombs, upload names, non-finite numbers, bad config values, models
that fail on large batches, hostile CSVs, and formula cells in every CSV we write."""

from __future__ import annotations

import os
import pickle
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from dashboard.uploads import save_upload
from engine.core.csv_io import read_table, to_csv
from engine.core.errors import ConfigError
from engine.datasets import DatasetError, get_dataset
from store import Store
from store import campaigns as sc
from tests.reliability.conftest import cli, one_line_error

MARKER = "lf-pickle-bomb-ran"


class Bomb:
    """Unpickling this calls os.system: what a crafted data_batch_1 would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_bomb_cifar_batch_does_not_execute(tmp_path: Path):
    marker = tmp_path / MARKER
    for name in ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5"]:
        with open(tmp_path / name, "wb") as f:
            pickle.dump({b"data": Bomb(marker), b"labels": [1]}, f)
    # Control: the same file through plain pickle runs the command.
    with open(tmp_path / "data_batch_1", "rb") as f:
        pickle.load(f)
    assert marker.exists()
    marker.unlink()
    with pytest.raises(DatasetError, match=r"refusing posix\.system: only numpy arrays"):
        get_dataset("cifar10", tmp_path).load("train")
    assert not marker.exists()


def test_a_plain_cifar_batch_with_numpy_arrays_still_reads(tmp_path: Path):
    for name in [f"data_batch_{i}" for i in range(1, 6)]:
        with open(tmp_path / name, "wb") as f:
            pickle.dump(
                {
                    b"data": np.full((2, 3072), 7, np.uint8),
                    b"labels": [1, 2],
                    b"filenames": [b"a.png", "b.png"],
                    b"n": np.int64(2),
                },
                f,
            )
    split = get_dataset("cifar10", tmp_path).load("train")
    assert tuple(split.images.shape) == (10, 3, 32, 32)


@pytest.mark.parametrize(
    "name", ["a/../../x.pt", "../../x.pt", "..\\..\\x.pt", "/etc/x.pt", "..", "", ".bashrc"]
)
def test_an_upload_lands_inside_the_home_under_a_safe_name(home: Path, name: str):
    path = save_upload(home, name, b"model bytes")
    assert path.resolve().parent == (home / "uploads").resolve()
    assert path.read_bytes() == b"model bytes"
    assert not path.name.split("-", 1)[1].startswith(".")
    assert [p for p in home.parent.rglob("*.pt") if home not in p.parents] == []


def test_formula_cells_are_neutralised_and_numbers_are_not(tmp_path: Path):
    df = pd.DataFrame(
        {
            "who": ['=HYPERLINK("http://x")', "+1", "-2+3", "@SUM(A1)", "bob"],
            "score": [-1.5, 2, 3, 4, 5],
        }
    )
    text = to_csv(df)
    back = pd.read_csv(pd.io.common.StringIO(text))
    assert back["who"].tolist() == ['\'=HYPERLINK("http://x")', "'+1", "'-2+3", "'@SUM(A1)", "bob"]
    assert back["score"].tolist() == [-1.5, 2, 3, 4, 5]


def test_labels_export_neutralises_a_formula_labeller_name(home: Path, env, tmp_path: Path):
    src = tmp_path / "study.csv"
    src.write_text(
        "Image URL,ID,TOOL,MUT_EXT,Expected,=cmd|' /C calc'!A0,ASS 2\n"
        "a.png,1,vae,high,3,3,3\nb.png,2,vae,high,5,5,not a digit\n"
    )
    mapping = tmp_path / "m.yaml"
    mapping.write_text(
        "assessors: [\"=cmd|' /C calc'!A0\", ASS 2]\ndataset: null\n"
        "validity: null\npreservation: null\n"
    )
    cli(["labels", "import", str(src), "--dataset", "mnist", "--mapping", str(mapping)], env)
    from store import labels

    sid = labels.validity_studies(Store(home / "latentfuzz.duckdb"))["id"].iloc[0]
    out = tmp_path / "raw.csv"
    cli(["labels", "export", sid, "--raw", str(out)], env)
    raw = pd.read_csv(out, dtype=str)
    assert "'=cmd|' /C calc'!A0" in raw["labeller"].tolist()
    assert not raw["labeller"].str.startswith(("=", "+", "-", "@")).any()


# -- config values ------------------------------------------------------------------------

TINY = ["--seeds", "2", "--generations", "3", "--population", "6", "--best-left", "2", "--quiet"]


@pytest.mark.parametrize(
    "args,yaml_text,says",
    [
        (["--step", "inf"], None, "strategy_params.step"),
        (["--step", "nan"], None, "strategy_params.step"),
        ([], "strategy_params:\n  perturbation: custom\n  step: .inf\n", "strategy_params.step"),
        ([], "flush_seconds: .nan\n", "config.flush_seconds"),
        ([], "generator: dm\ngenerator_params:\n  guidance: .inf\n", "generator_params"),
        ([], "device: banana\n", "device 'banana' is not a torch device"),
        ([], "strategy_params: 5\n", "strategy_params is 5 (int), expected a mapping"),
    ],
)
def test_a_bad_config_value_is_one_line_and_writes_nothing(
    home: Path, env, tmp_path: Path, args, yaml_text, says
):
    extra = []
    if yaml_text is not None:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(yaml_text)
        extra = ["--config", str(cfg)]
    p = cli(["run", *TINY, *args, *extra], env, ok=False)
    one_line_error(p, says)
    assert list(home.iterdir()) == []


@pytest.mark.parametrize(
    "args,says",
    [
        (["--generations", "0"], "strategy_params.generations"),
        (["--step", "inf"], "strategy_params.step"),
        (["--generator", "foo"], "no generator 'foo'"),
    ],
)
def test_a_refusal_without_quiet_is_one_line_too(home: Path, env, args, says):
    # The progress bar, on a pipe, left an empty line before the refusal.
    one_line_error(cli(["run", "--seeds", "2", *args], env, ok=False), says)


class FailsOnLargeBatches(torch.nn.Module):
    """Says 3 for every image; raises on more than 8 images at once."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] > 8:
            raise RuntimeError("out of memory: batch too large for this model")
        logits = torch.zeros(x.shape[0], 10) + 0.0 * x.mean(dim=(1, 2, 3))[:, None]
        logits[:, 3] = 10.0
        return logits


def test_a_classifier_failing_on_large_batches_ends_failed_in_one_line(home, env, tmp_path):
    model = tmp_path / "fragile.pt"
    torch.jit.save(torch.jit.script(FailsOnLargeBatches()), str(model))
    p = cli(
        ["run", *TINY, "--classifier", str(model), "--target-class", "3", "--id", "frag"],
        env,
        ok=False,
    )
    line = one_line_error(
        p,
        "the classifier failed on a batch of 12 images",
        "out of memory: batch too large",
        "--batch-size",
    )
    c = sc.campaign(Store(home / "latentfuzz.duckdb"), "frag")
    assert c["status"] == "failed" and c["error"] == "ModelError: " + line.split("error: ", 1)[1]
    # With batches the model can take, the same campaign runs.
    cli(["run", *TINY, "--classifier", str(model), "--target-class", "3", "--batch-size", "6"], env)


# -- CSV import ---------------------------------------------------------------------------

HEADER = "Image URL,ID,TOOL,MUT_EXT,Expected,ASS 1,ASS 2\n"


def test_a_ragged_csv_row_is_refused_with_its_line_number(tmp_path: Path):
    f = tmp_path / "r.csv"
    f.write_text(HEADER + "a.png,1,vae,high,3,3,3\nb.png,2,vae,high,5,5\nc,3,vae,high,1,1,1,1\n")
    with pytest.raises(ConfigError, match=r"header's 7 columns \(line 3 has 6; line 4 has 8\)"):
        read_table(f)


@pytest.mark.parametrize(
    "encoding,says",
    [
        ("binary", "is a binary file"),
        ("utf-16-le", "looks like UTF-16 without a byte-order mark"),
        ("latin-1", "pass --encoding latin-1"),
    ],
)
def test_a_csv_in_another_encoding_says_which_it_needs(
    home: Path, env, tmp_path: Path, encoding, says
):
    f = tmp_path / "e.csv"
    text = HEADER + "a.png,1,vae,high,3,3,not a digit — é\n"
    f.write_bytes(os.urandom(2000) if encoding == "binary" else text.encode(encoding, "replace"))
    p = cli(["labels", "import", str(f), "--dataset", "mnist"], env, ok=False)
    one_line_error(p, says)
    assert not (home / "latentfuzz.duckdb").exists() or labels_count(home) == 0
    if encoding != "binary":  # with the encoding named, or a byte-order mark, it reads
        assert read_table(f, encoding)["ASS 2"][0].endswith("é")
        f.write_bytes(text.encode("utf-16"))
        assert read_table(f)["ASS 2"][0].endswith("é")


def labels_count(home: Path) -> int:
    from store import labels

    return len(labels.validity_studies(Store(home / "latentfuzz.duckdb")))


def test_a_huge_csv_stops_at_the_row_limit_with_bounded_memory(tmp_path: Path):
    f = tmp_path / "big.csv"
    row = "a.png,1,vae,high,3,3," + "x" * 200 + "\n"
    with open(f, "w") as out:
        out.write(HEADER)
        for _ in range(40):
            out.write(row * 2_500)  # 100,000 rows, about 23 MB
    tracemalloc.start()
    with pytest.raises(ConfigError, match=r"more than 1,000 data rows .* --max-rows"):
        read_table(f, max_rows=1_000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2_000_000  # the first 1,000 rows, not the 23 MB file
    assert len(read_table(f, max_rows=100_000)) == 100_000
