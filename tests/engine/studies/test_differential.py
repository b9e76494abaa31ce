"""`latentfuzz diff-study` (engine/studies/differential.py): its pairs, and Ctrl-C on the
grid runner."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_diff_study_pairs_must_be_pairs():
    from engine.cli.differential import parse_pairs
    from engine.core.errors import LatentfuzzError

    assert parse_pairs("a:b, c:d") == [["a", "b"], ["c", "d"]]
    with pytest.raises(LatentfuzzError, match="'convnet' is not a classifier pair"):
        parse_pairs("convnet")


def interrupted_study(monkeypatch, owner, name: str, nth: int, repetitions: int) -> str:
    """Run a tiny diff-study with SIGINT sent at the `nth` call of owner.name (Ctrl-C raises
    KeyboardInterrupt, as in the CLI); the StudyStopped message it ends with."""
    import os
    import signal

    from engine.studies.differential import StudyStopped, run_diff_study

    real, calls = getattr(owner, name), []

    def wrapper(*a, **k):
        calls.append(1)
        if len(calls) == nth:
            os.kill(os.getpid(), signal.SIGINT)
        return real(*a, **k)

    monkeypatch.setattr(owner, name, wrapper)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(StudyStopped) as e:
            run_diff_study(
                [["mnist-convnet", "mnist-lenet5"]],
                generator="vae",
                seeds=1,
                evaluations=40,
                population=8,
                repetitions=repetitions,
                name="s",
                home=Path(os.environ["LATENTFUZZ_HOME"]),
            )
    finally:
        signal.signal(signal.SIGINT, old)
    assert len(calls) == nth  # nothing ran after it
    return str(e.value)


def test_ctrl_c_stops_a_diff_study_and_says_how_far_it_got(home, monkeypatch):
    # Before, the interrupted campaign was counted and the study ran its other campaigns.
    from engine.campaign import loop as search_loop

    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    said = interrupted_study(monkeypatch, search_loop.Campaign, "run", 2, repetitions=2)
    assert "stopped by Ctrl-C after 1 of its 4 campaigns" in said


def test_ctrl_c_while_a_diff_study_checks_its_campaigns_says_so_too(home, monkeypatch):
    from engine.studies import grid  # the grid runner checks every cell before any runs

    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    said = interrupted_study(monkeypatch, grid, "resolve", 1, repetitions=1)
    assert "after 0 of its 2 campaigns" in said


def test_the_ablation_runs_nsga2_on_divergence_alone_at_the_same_budget():
    from engine.studies.differential import ABLATION, study_grid

    def cells(ablation: bool):
        grid = study_grid([["a", "b"]], "gan", 2, 600, 100, 1, "pca", "s", ablation)
        return {c.values["strategy"]: c.raw for c in grid.cells()}

    assert list(cells(False)) == ["nsga2", "ga"]
    both = cells(True)
    assert list(both) == ["nsga2", "ga", ABLATION]
    ablation, nsga2 = both[ABLATION], both["nsga2"]
    assert ablation["strategy"] == "nsga2" and nsga2["strategy"] == "nsga2"
    assert ablation["strategy_params"]["objectives"] == "divergence"
    assert "objectives" not in nsga2["strategy_params"]  # DiffGAN's two, the default
    # The same population and generations: the same evaluations per search.
    same = ("population", "generations", "stop_at_failure")
    assert {k: ablation["strategy_params"][k] for k in same} == {
        k: nsga2["strategy_params"][k] for k in same
    }
    assert nsga2["strategy_params"]["population"] == 100  # DiffGAN's


def test_a_study_with_the_ablation_and_other_diversity_settings(home):
    """Three methods, each its own row; the geometric diversity measured again as asked."""
    from engine.search.diversity import GeometricSpec
    from engine.studies.differential import ABLATION, run_diff_study
    from store import Store
    from store import differential as sd

    table = run_diff_study(
        [["mnist-convnet", "mnist-lenet5"]],
        generator="gan",
        seeds=2,
        evaluations=80,
        population=8,
        repetitions=1,
        name="abl",
        home=home,
        ablation=True,
        spec=GeometricSpec("pixels", 5, 3),
    )
    assert table["method"].tolist() == ["nsga2", "ga", ABLATION]
    assert (table["runs"] == 1).all()
    assert {"shannon_diversity_mean", "label_entropy_mean"} <= set(table.columns)
    store = Store(home / "latentfuzz.duckdb")
    ids = store.query("SELECT id FROM campaigns WHERE name LIKE 'abl %'")["id"].tolist()
    figs = sd.differential_table(store, ids)
    assert len(figs) == 3
    # Measured again with the study's settings (campaigns close with DiffGAN's: conv).
    assert (figs["geometric_features"] == "pixels").all()
    assert (figs["geometric_subset"] <= 5).all() and (figs["geometric_draws"] <= 3).all()
    assert (figs["triggering"] > 0).any()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--features", "vgg16"], "--features is 'vgg16', expected one of conv, penultimate"),
        (["--geo-subset", "0"], "--geo-subset is 0, expected 1 to 10,000"),
        (["--geo-draws", "5000"], "--geo-draws is 5000, expected 1 to 1,000"),
    ],
)
def test_diversity_options_out_of_range_are_refused_in_one_line(env, args, says):
    import subprocess

    from tests.helpers import CLI

    cmd = [*CLI, "diff-study", "--repetitions", "1", *args]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and says in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert "Traceback" not in out.stderr
