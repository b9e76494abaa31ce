"""The documentation site: it builds with --strict, the README stays short, the generated
command-line reference lists every command, and every command the pages name exists (so a
renamed command fails here, not in a reader's terminal)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def load_hooks():
    """docs/hooks.py as a module (docs/ is no package): the one place that imports the CLI."""
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = load_hooks()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built by `mkdocs build --strict`, as `make docs` builds it."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-q",
            "-f",
            str(ROOT / "mkdocs.yml"),
            "-d",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_the_site_builds_strict_with_every_page(site: Path):
    for page in (
        "index.html",
        "reference/cli/index.html",
        "reference/config/index.html",
        "reference/store/index.html",
        "development/architecture/index.html",
    ):
        assert (site / page).is_file(), page
    assert not (site / "hooks.py").exists()  # the hook is not published


def test_the_cli_reference_lists_every_visible_command(site: Path):
    text = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    paths = [path for path, _, _ in hooks.visible_commands()]
    assert len(paths) > 20  # the walk found the app's commands
    for path in paths:
        assert f"<code>latentfuzz {' '.join(path)}</code>" in text, path


def test_the_config_and_store_references_come_from_the_code(site: Path):
    from engine.search.strategies import STRATEGIES
    from store.schema import SCHEMA_VERSION

    config = (site / "reference" / "config" / "index.html").read_text(encoding="utf-8")
    for name in STRATEGIES.names():
        assert f"<code>{name}</code>" in config, name
    assert "<code>batch_memory_mb</code>" in config
    store = (site / "reference" / "store" / "index.html").read_text(encoding="utf-8")
    assert f"Schema version <strong>{SCHEMA_VERSION}</strong>" in store
    assert "<code>individuals</code>" in store and "Append-mostly" in store


def test_the_readme_is_at_most_200_lines():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move detail into docs/"


def code_of(text: str) -> list[str]:
    """The code in Markdown: fenced blocks and inline code spans."""
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.M | re.S)
    rest = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.M | re.S)
    return fenced + re.findall(r"`([^`\n]+)`", rest)


def test_every_command_the_pages_name_exists():
    commands = {path: cmd for path, cmd, _ in hooks.visible_commands()}
    # A command line: `latentfuzz ...`, `$ latentfuzz ...` or `.venv/bin/latentfuzz ...`.
    named = re.compile(r"^(?:\$ )?(?:\S*/)?latentfuzz ([a-z][\w-]*)(?: ([a-z][\w-]*))?", re.M)
    pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    wrong = []
    for page in pages:
        for code in code_of(page.read_text(encoding="utf-8")):
            for first, second in named.findall(code):
                where = f"{page.relative_to(ROOT)}: latentfuzz {first} {second}".strip()
                sub = getattr(commands.get((first,)), "commands", None) and second
                if (first,) not in commands or (sub and (first, second) not in commands):
                    wrong.append(where)
    assert not wrong, "commands the docs name that the CLI lacks:\n" + "\n".join(wrong)


def test_the_layout_page_names_every_engine_package():
    layout = (DOCS / "development" / "layout.md").read_text(encoding="utf-8")
    packages = sorted(p.name for p in (ROOT / "engine").iterdir() if (p / "__init__.py").is_file())
    missing = [p for p in packages if f"── {p}/" not in layout]
    assert not missing, f"docs/development/layout.md lacks engine packages: {missing}"
