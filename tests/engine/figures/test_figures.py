"""`make figures` (engine/figures/): a figure family in quick mode writes a fragment of
the right shape with its stamp, and every fragment the docs need exists and is included."""

from __future__ import annotations

import datetime as dt
import re
import subprocess
from pathlib import Path

import pytest

from engine.figures import FIGURES
from engine.figures.base import FRAGMENTS, HEADER, REPO
from engine.figures.main import main


def test_interpolate_lambda_quick_writes_a_stamped_fragment(tmp_path: Path, capsys):
    assert main(["--only", "interpolate-lambda", "--quick", "--out", str(tmp_path)]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["interpolate-lambda.md"]
    lines = (tmp_path / "interpolate-lambda.md").read_text(encoding="utf-8").splitlines()
    assert lines[0] == HEADER.format(name="interpolate-lambda")
    rows = [ln for ln in lines if ln.startswith("|")]
    # Header, rule, error rate, SSIM; a lambda column per step of the quick grid (3).
    assert [r.split("|")[1].strip() for r in rows] == [
        "lambda",
        "---",
        "error rate",
        "SSIM to the seed",
    ]
    assert {len(r.split("|")) for r in rows} == {3 + 3}
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    stamp = lines[-1]
    assert re.fullmatch(
        r"\*Made at commit `[0-9a-f]{12}\+?` on \d{4}-\d\d-\d\d with AVX2 kernels by .*\.\*", stamp
    )
    assert f"`{head}" in stamp and dt.datetime.now(dt.UTC).date().isoformat() in stamp
    assert "`make figures ONLY=interpolate-lambda`" in stamp
    assert (
        "`latentfuzz run --strategy interpolate --seeds 2 --seed 1 -p k=1 -p lambda_steps=3`"
        in stamp
    )
    assert "quick size" in stamp
    assert f"wrote {tmp_path / 'interpolate-lambda.md'}" in capsys.readouterr().out


def test_an_unknown_figure_is_refused_before_anything_runs(tmp_path: Path, capsys):
    assert main(["--only", "strategy-study,nope", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: figure nope unknown; expected one of ")
    assert err.count("\n") == 1  # one line
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("name", FIGURES.names())
def test_every_figure_has_a_fragment_that_a_page_includes(name: str):
    text = (FRAGMENTS / f"{name}.md").read_text(encoding="utf-8")
    assert text.splitlines()[0] == HEADER.format(name=name)
    marker = f"<!-- generated: figure-{name} -->"
    pages = [p for p in (REPO / "docs").rglob("*.md") if marker in p.read_text(encoding="utf-8")]
    assert pages, f"no docs page includes {marker}"


def test_every_fragment_belongs_to_a_figure():
    assert sorted(p.stem for p in FRAGMENTS.glob("*.md")) == FIGURES.names()


def test_the_stamp_counts_changes_to_code_not_to_the_fragments(tmp_path, monkeypatch):
    """A run of several figures writes each fragment as it goes: the later ones were
    stamped '+' (uncommitted changes) for the earlier ones' output alone."""
    from engine.figures import base

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "docs" / "figures").mkdir(parents=True)
    (tmp_path / "docs" / "figures" / "a.md").write_text("old\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    monkeypatch.setattr(base, "REPO", tmp_path)
    monkeypatch.setattr(base, "FRAGMENTS", tmp_path / "docs" / "figures")
    (tmp_path / "docs" / "figures" / "a.md").write_text("new\n")
    assert not base.commit().endswith("+")
    (tmp_path / "code.py").write_text("x = 2\n")
    assert base.commit().endswith("+")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FIGURES.names()))
def test_every_figure_builds_at_its_quick_size(name: str, tmp_path: Path):
    """The differential figure read a column a later change renamed ('strategy' became
    'method') and failed only when `make figures` ran at full size."""
    assert main(["--only", name, "--quick", "--out", str(tmp_path)]) == 0
    text = (tmp_path / f"{name}.md").read_text(encoding="utf-8")
    assert text.count("\n|") >= 3 and "(quick size" in text
