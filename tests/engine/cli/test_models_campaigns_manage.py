"""`latentfuzz models rename | delete` and `latentfuzz delete` (a campaign): they do what they
say, say what went, and refuse in one line with nothing changed."""

from __future__ import annotations

import re
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.cli.main import app
from engine.core import home as home_module
from engine.core.errors import LatentfuzzError
from engine.models import zoo
from store import Store, create_campaign
from tests.helpers import CLI
from tests.tiny_data import save_tiny_models


@pytest.fixture
def mine(home: Path, monkeypatch) -> Path:
    """A home with the user's own `pets-vae` and `pets-convnet` (MNIST-shaped)."""
    monkeypatch.setattr(home_module, "_current", home)
    save_tiny_models(home / "models", "mnist", (1, 28, 28), 10, None, prefix="pets")
    return home


def run(args: list[str], home: Path, answer: str | None = None) -> str:
    """The CLI in this process (a process costs seconds to start); raises what it raised."""
    result = CliRunner().invoke(app, [*args, "--home", str(home)], input=answer)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return " ".join(result.output.split())


def campaign(home: Path, cid: str, classifier_b: str = "mnist-convnet") -> Path:
    """A finished campaign row naming `classifier_b`, with a folder of two files."""
    create_campaign(
        Store(home / "latentfuzz.duckdb"),
        {
            "id": cid,
            "name": f"run {cid}",
            "status": "finished",
            "created_at": datetime(2026, 1, 1),
            "dataset": "mnist",
            "generator": "mnist-gan",
            "classifier": "mnist-convnet",
            "classifier_b": classifier_b,
            "strategy": "nsga2",
            "n_seeds": 2,
            "random_seed": 0,
            "config": {},
            "environment": {},
            "dir": f"campaigns/{cid}",
        },
    )
    folder = home / "campaigns" / cid
    folder.mkdir(parents=True)
    (folder / "a.bin").write_bytes(b"x" * 1500)
    (folder / "b.txt").write_text("hello")
    return folder


def names(home: Path) -> list[str]:
    return sorted(p.name for p in (home / "models").iterdir())


def test_models_rename_then_delete(mine: Path):
    assert run(["models", "rename", "pets-convnet", "my-net"], mine) == (
        "renamed model pets-convnet to my-net"
    )
    assert names(mine) == ["my-net", "pets-vae"] and zoo.load_card("my-net")["name"] == "my-net"
    said = run(["models", "delete", "my-net", "--yes"], mine)
    assert re.fullmatch(r"deleted model my-net \(2 files, [\d.]+ MB\)", said), said
    assert names(mine) == ["pets-vae"]


def test_models_delete_asks_first_and_no_keeps_it(mine: Path):
    with pytest.raises(LatentfuzzError, match="nothing deleted"):
        run(["models", "delete", "pets-vae"], mine, answer="n\n")
    assert names(mine) == ["pets-convnet", "pets-vae"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["delete", "pets-convnet", "--yes"], "cannot delete pets-convnet: 1 campaign uses it"),
        (["rename", "pets-convnet", "x"], "cannot rename pets-convnet: 1 campaign uses it"),
        (["delete", "mnist-convnet", "--yes"], "'mnist-convnet' is a bundled model"),
        (["delete", "nope", "--yes"], "you have no model 'nope'"),
    ],
)
def test_models_refusals_change_nothing(mine: Path, args: list[str], said: str):
    campaign(mine, "c1", classifier_b="pets-convnet")
    with pytest.raises(LatentfuzzError) as e:
        run(["models", *args], mine)
    assert said in str(e.value) and "\n" not in str(e.value)
    assert names(mine) == ["pets-convnet", "pets-vae"]


def test_a_refusal_reaches_the_user_in_one_line(mine: Path, env: dict[str, str]):
    campaign(mine, "c1", classifier_b="pets-convnet")
    p = subprocess.run(
        [*CLI, "models", "delete", "pets-convnet", "--yes"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and "Traceback" not in p.stderr
    lines = [line for line in (p.stdout + p.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: cannot delete pets-convnet")


def test_campaigns_delete_says_what_went(home: Path):
    folder = campaign(home, "c1")
    said = run(["delete", "c1", "--yes"], home)
    assert said == "deleted campaign c1: 1 rows of the store and 2 files (1.5 KB) removed"
    assert not folder.exists()
