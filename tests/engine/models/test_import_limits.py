"""`models import` under limits: declared latent shapes are bounded before anything is
allocated, and a model that never answers is stopped in a child process."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import torch
from torch import nn

from engine.core.errors import LatentfuzzError
from engine.models.importing import MAX_LATENT_ELEMENTS, import_classifier, import_generator
from engine.models.limited import ENV_VAR
from tests.engine.classifiers.test_onnx import Net
from tests.engine.models.test_importing import (  # noqa: F401
    Unconditional,
    left_behind,
    models_cli,
    script,
    user_home,
)


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ("100000000000", r"--latent-shape \[100000000000\]: one latent is 100000000000 values"),
        ("4,100000,100000", r"one latent is 40000000000 values, expected at most 1,048,576"),
        ("1e400", r"--latent-shape '1e400': sizes must be whole numbers"),
        ("0,8", r"--latent-shape \[0, 8\]: expected positive sizes"),
    ],
)
def test_a_huge_latent_shape_is_one_line_before_any_allocation(
    user_home: Path,  # noqa: F811
    tmp_path: Path,
    shape: str,
    message: str,
):
    dec = script(Unconditional(), tmp_path / "u.pt")
    args = ["import-generator", str(dec), "--dataset", "mnist", "--latent-shape", shape]
    with pytest.raises(LatentfuzzError, match=message) as e:
        models_cli([*args, "--classes", "10"], user_home)
    assert "\n" not in str(e.value)
    assert left_behind(user_home) == []


def test_the_latent_bound_holds_for_callers_of_the_engine(user_home: Path, tmp_path):  # noqa: F811
    dec = script(Unconditional(), tmp_path / "u.pt")
    with pytest.raises(LatentfuzzError, match="one latent is"):
        import_generator(dec, "mnist", (MAX_LATENT_ELEMENTS + 1,), 10)
    assert left_behind(user_home) == []


#: CPU seconds the looping child has spent when its parent is killed: well past start-up.
SPIN_CPU_S = 12.0


class Forever(nn.Module):
    """A classifier whose forward never returns: a loop on a tensor that stays >= 0."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        i = torch.zeros(1)
        while bool((i >= 0).all()):
            i = i + 1
        return x.flatten(1)[:, :10]


class ForeverDecoder(nn.Module):
    def forward(self, z: torch.Tensor) -> torch.Tensor:
        i = torch.zeros(1)
        while bool((i >= 0).all()):
            i = i + 1
        return torch.zeros(z.shape[0], 1, 28, 28)


def our_children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def test_a_classifier_that_loops_forever_is_stopped_and_its_process_killed(
    user_home: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch,
):
    monkeypatch.setenv(ENV_VAR, "3")
    before = our_children()
    ts = tmp_path / "forever.pt"
    torch.jit.save(torch.jit.script(Forever()), str(ts))
    with pytest.raises(LatentfuzzError) as e:
        models_cli(["import", str(ts), "--dataset", "mnist"], user_home)
    msg = str(e.value)
    assert "classifier forever.pt did not answer a test input within 3 s" in msg, msg
    assert ENV_VAR in msg and "\n" not in msg
    assert left_behind(user_home) == []
    assert our_children() <= before  # killed and reaped, not left spinning


def test_a_decoder_that_loops_forever_is_stopped(user_home: Path, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv(ENV_VAR, "3")
    before = our_children()
    dec = script(ForeverDecoder(), tmp_path / "forever.pt")
    with pytest.raises(LatentfuzzError, match="decoder forever.pt did not answer a test input"):
        import_generator(dec, "mnist", (8,), 10)
    assert left_behind(user_home) == []
    assert our_children() <= before


def test_a_bad_limit_is_one_line(user_home: Path, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv(ENV_VAR, "soon")
    ts = tmp_path / "clf.pt"
    torch.jit.save(torch.jit.script(Net().eval()), str(ts))
    with pytest.raises(LatentfuzzError, match=rf"\${ENV_VAR} is 'soon', expected a positive"):
        import_classifier(ts, "mnist")
    assert left_behind(user_home) == []


def test_a_killed_import_takes_its_model_check_with_it(tmp_path: Path, env: dict):
    """SIGKILL to `models import` while its child runs a looping model: the child dies
    too (it spun on after its parent before)."""
    ts = tmp_path / "forever.pt"
    torch.jit.save(torch.jit.script(Forever()), str(ts))
    cmd = [sys.executable, "-m", "engine.cli.main", "models", "import", str(ts), "--dataset"]
    proc = subprocess.Popen(
        [*cmd, "mnist"],
        env={**env, ENV_VAR: "600"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    child = None
    try:
        deadline = time.monotonic() + 300
        while child is None and time.monotonic() < deadline and proc.poll() is None:
            kids = psutil.Process(proc.pid).children()
            child = kids[0] if kids else None
            time.sleep(0.2)
        assert child is not None, "the import started no model check"
        # Past its start-up (torch's import costs a few CPU seconds) and into the loop: a
        # child killed earlier dies on its next report to the gone parent instead.
        while child.cpu_times().user < SPIN_CPU_S and time.monotonic() < deadline:
            time.sleep(0.5)
        proc.kill()
        proc.wait()
        gone, alive = psutil.wait_procs([child], timeout=30)
        assert not alive, f"the model check {child.pid} outlived its killed parent"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if child is not None and child.is_running():
            child.kill()
