"""The architecture's contracts (pyproject.toml, [tool.importlinter]): they hold on the
code, and they break on the imports they exist to refuse."""

from __future__ import annotations

import ast
import os
import pkgutil
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import engine
from engine import api

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def lint(cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(
        [str(LINT), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def copy_project(dest: Path) -> Path:
    for name in ("engine", "store", "dashboard", "pages"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", dest)
    return dest


def test_the_contracts_hold() -> None:
    r = lint(ROOT)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "broken" not in r.stdout.lower().replace("0 broken", "")


@pytest.mark.parametrize(
    ("file", "line", "contract"),
    [
        ("pages/probe.py", "from engine.campaign import runner", "engine.api only"),
        ("dashboard/probe.py", "from engine.models.zoo import list_cards", "engine.api only"),
        ("store/probe.py", "from engine.core import errors", "never imports the engine"),
        ("engine/core/probe.py", "from engine.campaign import config", "downwards only"),
        ("engine/generators/probe.py", "from engine.models import zoo", "downwards only"),
        ("engine/search/probe.py", "from engine.campaign import loop", "downwards only"),
    ],
)
def test_a_forbidden_import_breaks_a_contract(tmp_path, file, line, contract) -> None:
    project = copy_project(tmp_path)
    (project / file).write_text(f'"""A probe."""\n\n{line}\n')
    r = lint(project)
    assert r.returncode == 1, r.stdout[-3000:]
    broken = r.stdout[r.stdout.index("Broken contracts") :]
    assert contract in broken and file.replace("/", ".").removesuffix(".py") in broken


def test_every_engine_package_but_the_api_is_forbidden_to_the_ui() -> None:
    forbidden = next(c for c in CONFIG["contracts"] if c["id"] == "ui-through-api")
    packages = {f"engine.{m.name}" for m in pkgutil.iter_modules(engine.__path__)}
    assert set(forbidden["forbidden_modules"]) == packages - {"engine.api"}


def test_every_layer_is_an_engine_package() -> None:
    layers = next(c for c in CONFIG["contracts"] if c["id"] == "engine-layers")["layers"]
    named = {m.strip() for layer in layers for m in layer.split("|")}
    packages = {f"engine.{m.name}" for m in pkgutil.iter_modules(engine.__path__) if m.ispkg}
    assert named == packages | {"engine.api"}


def test_the_api_resolves_every_name_it_lists() -> None:
    for name in api.__all__:
        assert getattr(api, name) is not None, name
    # The names a type checker and import-linter see are the names it serves.
    tree = ast.parse(Path(api.__file__).read_text())
    guarded = next(n for n in tree.body if isinstance(n, ast.If))
    seen = {a.asname or a.name for n in guarded.body for a in n.names}
    assert seen == set(api.__all__)


def _function_imports_without_reason(path: Path) -> list[int]:
    """Lines of imports inside functions whose block has no comment line above it."""
    lines = path.read_text().splitlines()
    tree = ast.parse(path.read_text())
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                first = node.lineno
                # the block's first line: climb over imports and their reason comment
                while first > 1 and lines[first - 2].strip().startswith(("from ", "import ", ")")):
                    first -= 1
                while first > 1 and lines[first - 2].strip().endswith(","):
                    first -= 1
                if not lines[first - 2].strip().startswith("#"):
                    found.append(node.lineno)
    return found


def test_every_import_inside_a_function_says_why() -> None:
    # Imports go at the top; one inside a function is deferred for a measured start-up
    # cost (torch, DuckDB, pandas...) or an optional extra, said in the comment above it.
    missing = {
        str(p.relative_to(ROOT)): lines
        for package in ("engine", "store", "dashboard", "pages")
        for p in sorted((ROOT / package).rglob("*.py"))
        if (lines := _function_imports_without_reason(p))
    }
    assert not missing, missing


def test_the_formatter_is_not_switched_off_anywhere() -> None:
    # `ruff format --check` runs in make lint; a marker would exempt the code it marks.
    marked = [
        str(p.relative_to(ROOT))
        for package in ("engine", "store", "dashboard", "pages", "tests", "docs")
        for p in sorted((ROOT / package).rglob("*.py"))
        if "fmt: " + "skip" in p.read_text() or "fmt: " + "off" in p.read_text()
    ]
    assert not marked, marked
