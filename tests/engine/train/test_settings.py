"""engine/train/settings.py and the CLI's shared `train` options (engine/cli/train.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from engine.cli.train import shared_options, train_app
from engine.core import home as home_module
from engine.train.settings import TrainSettings


def test_settings_are_frozen():
    s = TrainSettings("mnist", epochs=1, batch_size=8)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.epochs = 2  # type: ignore[misc]
    assert (s.seed, s.device, s.fp16, s.name, s.classifier) == (0, "cpu", True, None, None)


def test_shared_options_gather_into_one_settings_object(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(home_module, "_current", home_module._current)  # --home sets it
    got = {}
    app = typer.Typer()

    @app.command()
    @shared_options(7, 32)
    def cmd(settings: TrainSettings, size: Annotated[int, typer.Option()] = 3) -> None:
        got.update(settings=settings, size=size)

    args = ["--dataset", "cifar10", "--size", "5", "--seed", "4", "--classifier", "c"]
    args += ["--out", str(tmp_path), "--no-default", "--home", str(tmp_path)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert got["size"] == 5
    assert got["settings"] == TrainSettings(
        "cifar10", epochs=7, batch_size=32, seed=4, classifier="c", out=tmp_path, default=False
    )


@pytest.mark.parametrize(
    ("command", "epochs", "batch"),
    [("classifier", 15, 64), ("vae", 150, 128), ("gan", 80, 64), ("dm", 30, 64)],
)
def test_each_command_keeps_its_defaults_and_flags(command: str, epochs: int, batch: int):
    out = CliRunner().invoke(train_app, [command, "--help"], env={"COLUMNS": "200"}).output
    assert f"[default: {epochs}]" in out and f"[default: {batch}]" in out, out
    flags = ["--dataset", "--epochs", "--batch-size", "--seed", "--name", "--out"]
    flags += ["--default", "--no-default", "--data-dir", "--device", "--home"]
    assert all(f in out for f in flags), out
    assert ("--classifier" in out) == (command != "classifier")
