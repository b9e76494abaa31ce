"""`latentfuzz bench gpu`: refused in one line without CUDA; its plan rehearsed on the CPU;
the tests marked cuda left out of the default suite and collected by `-m cuda`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from rich.console import Console

from engine.bench import gpu
from tests.conftest import REPO
from tests.helpers import CLI

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")


@no_cuda
def test_bench_gpu_refuses_without_cuda_in_one_line(env: dict, tmp_path: Path):
    out = tmp_path / "figures.json"
    p = subprocess.run(
        [*CLI, "bench", "gpu", "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and p.stdout == ""
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("error: bench gpu --device cuda: torch sees no CUDA device")
    assert "expected an NVIDIA GPU" in line and "--device cpu to rehearse" in line
    assert not out.exists()


def test_an_unknown_device_is_refused():
    with pytest.raises(gpu.NoCudaError, match="expected cuda, cuda:N, or cpu"):
        gpu.require_device("mps")


def test_the_plan_runs_end_to_end_on_the_cpu(tmp_path: Path):
    console = Console(record=True, width=200)
    path = gpu.bench_gpu(
        "cpu",
        tmp_path / "figures.json",
        pytest_selection=(
            "tests/cuda/test_campaigns_cuda.py::test_a_campaign_runs_whole_on_the_device[vae]",
        ),
        console=console,
    )
    f = json.loads(path.read_text())
    steps = f["steps"]
    assert list(steps) == ["tests marked cuda", "campaigns", "campaign against raw"]
    # The cuda tests ran (on the CPU), not skipped or deselected.
    assert steps["tests marked cuda"]["exit_code"] == 0
    assert "1 passed" in steps["tests marked cuda"]["summary"]
    assert steps["campaigns"]["vae"]["campaign_evals_per_s"] > 0
    assert steps["campaigns"]["vae"]["device"] == "cpu"
    (size,) = steps["campaign against raw"]["sizes"]
    assert size["seeds"] == 2 and 0 < size["shape_bound"] <= 1
    md = path.with_suffix(".md").read_text()
    assert "| vae |" in md and "| 2 |" in md and "pytest -m cuda: exit 0" in md
    text = console.export_text()
    for name in steps:
        assert f"{name}: " in text
    assert " s left" in text and str(path) in " ".join(text.split())


def test_a_spent_budget_skips_the_steps_and_still_writes_the_file(tmp_path: Path):
    path = gpu.bench_gpu("cpu", tmp_path / "f.json", budget_s=1e-9, console=Console(quiet=True))
    steps = json.loads(path.read_text())["steps"]
    assert all("skipped" in s for s in steps.values()) and len(steps) == 3


def collected(*args: str) -> list[str]:
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return [line for line in p.stdout.splitlines() if "::" in line]


def test_the_default_suite_leaves_the_cuda_tests_out():
    assert collected("tests/cuda") == []
    marked = collected("-m", "cuda", "tests/cuda")
    assert len(marked) >= 4  # vae, gan, dm campaigns and the tiny SD pipeline
    assert all(t.startswith("tests/cuda/") for t in marked)
    # The slow target's selection does not pick them up either.
    assert collected("-m", "slow", "tests/cuda") == []
