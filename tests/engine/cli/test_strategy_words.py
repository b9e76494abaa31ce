"""The CLI tells a campaign's search in its strategy's words: NSGA-II searches its whole
generation budget past the first failure, so `run`'s closing summary, `campaigns` and
`show` give its generations and evaluations, never "iterations" (a 10-generation search
read "mean iterations 1.0")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.cli.common import console
from engine.cli.main import app
from store import Store
from store import campaigns as sc


def cli(*args: str) -> str:
    out = CliRunner().invoke(app, list(args), terminal_width=200)
    assert out.exit_code == 0, out.output
    return " ".join(out.output.split())


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    """Tables as wide as they are: under xdist the console falls back to 80 columns."""
    monkeypatch.setattr(console, "_width", 250)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, str, str, str]:
    """(home, NSGA-II's id, its `run` output, a GA campaign's id) in one home."""
    home = str(tmp_path_factory.mktemp("home"))
    said = cli(
        "run",
        "--strategy",
        "nsga2",
        "--generator",
        "gan",
        "--classifier",
        "convnet",
        "--classifier-b",
        "lenet5",
        "--seeds",
        "2",
        "--seed",
        "1",
        # seed-noise: the seed's neighbourhood, where A and B disagree within 4 generations.
        *("-p", "init=seed-noise", "-p", "generations=4", "-p", "population=16"),
        *("-p", "cluster_every=2"),
        "--quiet",
        "--home",
        home,
    )
    nsga = said.split("campaign ")[1].split()[0]
    cli("run", "--seeds", "2", "--generations", "3", "--name", "plain", "--quiet", "--home", home)
    ga = next(
        i for i in sc.list_campaigns(Store(Path(home) / "latentfuzz.duckdb"))["id"] if i != nsga
    )
    return Path(home), nsga, said, ga


def test_runs_closing_summary_gives_nsga2s_generations_and_evaluations(runs):
    _, _, said, _ = runs
    assert "iteration" not in said, said
    # 4 generations x 16 latents: 64 evaluations each.
    assert "generations 4, evaluations per viable seed 64 (mean)" in said, said
    assert "first failure found in generation" in said


def test_a_ga_campaign_keeps_the_icst_iterations(runs):
    home, _, _, ga = runs
    said = cli("show", ga, "--home", str(home))
    assert "mean iterations (viable seeds, survivors at budget)" in said
    assert "evaluations per viable seed" not in said


def test_show_gives_nsga2s_seeds_in_generations_and_evaluations(runs):
    home, nsga, _, _ = runs
    said = cli("show", nsga, "--home", str(home))
    assert "iteration" not in said, said
    assert "first found (generation)" in said and "evaluations" in said
    assert "generations 4, evaluations per viable seed 64 (mean)" in said


def test_campaigns_leaves_nsga2s_iterations_blank_and_says_why(runs):
    home, nsga, _, ga = runs
    out = CliRunner().invoke(app, ["campaigns", "--home", str(home)], terminal_width=200)
    assert out.exit_code == 0, out.output
    cells = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[1:-1]]
        for line in out.output.splitlines()
        if nsga in line or ga in line
    }
    heads = [
        h.strip() for h in next(li for li in out.output.splitlines() if "┃ id" in li).split("┃")
    ]
    at = {h: i - 1 for i, h in enumerate(heads) if h}
    listed = sc.list_campaigns(Store(home / "latentfuzz.duckdb")).set_index("id")
    assert cells[ga][at["iterations (ICST)"]] == f"{listed.loc[ga, 'iterations_icst']:.1f}"
    assert cells[ga][at["generations"]] == ""
    # NSGA-II's: blank where a search length would be; its generations and evaluations.
    assert cells[nsga][at["iterations (ICST)"]] == cells[nsga][at["iter. to failure"]] == ""
    assert cells[nsga][at["generations"]] == "4" and cells[nsga][at["evals/seed"]] == "64"
    said = " ".join(out.output.split())
    assert "blank for a campaign that searches its whole budget" in said, said


def test_campaigns_of_nsga2_alone_list_generations_and_evaluations_only(runs, tmp_path):
    home, nsga, _, ga = runs
    alone = tmp_path / "home"
    shutil.copytree(home, alone)
    cli("delete", ga, "--yes", "--home", str(alone))
    out = CliRunner().invoke(app, ["campaigns", "--home", str(alone)], terminal_width=200)
    assert out.exit_code == 0, out.output
    head = next(li for li in out.output.splitlines() if "┃ id" in li)
    assert "generations" in head and "evals/seed" in head
    assert "iter" not in out.output, out.output  # no column, and no note about blank ones
