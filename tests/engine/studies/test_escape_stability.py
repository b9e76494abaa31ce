"""How many attempts per pair a stable ranking of the escape matrix needs: the bootstrap
over attempts on constructed tables whose answer is known."""

from __future__ import annotations

import subprocess

import pandas as pd
import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.studies.escape import attempts_needed, ranking_stability
from tests.helpers import CLI


def _table(rates: list[float], n: int) -> pd.DataFrame:
    """n attempts for each pair (0, t), round(rate x n) of them successes."""
    rows = []
    for t, rate in enumerate(rates, start=1):
        wins = round(rate * n)
        rows += [{"source": 0, "target": t, "success": i < wins} for i in range(n)]
    return pd.DataFrame(rows)


def test_stability_grows_with_attempts_and_names_the_count_needed():
    st = ranking_stability(_table([0.0, 0.2, 0.4, 0.6, 0.8, 1.0], 40), resamples=400)
    corr = st.set_index("attempts")["rank_correlation"]
    # The campaign's own count (40) is measured beside the usual sizes.
    assert list(st["attempts"]) == [1, 2, 3, 5, 10, 20, 40, 50]
    assert st.set_index("attempts")["extrapolated"].tolist() == [False] * 7 + [True]
    # One attempt per pair ranks the pairs poorly, forty rank them almost the same way.
    assert corr[1] < 0.6 and corr[40] > 0.9
    assert corr[1] < corr[3] < corr[10] < corr[40]
    assert (st["low"] <= st["rank_correlation"]).all()
    assert (st["rank_correlation"] <= st["high"]).all()
    need = attempts_needed(st, 0.9)
    assert need is not None and 1 < need <= 40
    assert attempts_needed(st, 1.01) is None


def test_pairs_that_never_differ_have_no_ranking():
    st = ranking_stability(_table([0.0, 0.0, 0.0], 5), sizes=(1, 5), resamples=50)
    assert (st["undefined"] == 1.0).all() and st["rank_correlation"].isna().all()
    assert attempts_needed(st) is None


def test_the_same_seed_gives_the_same_table():
    t = _table([0.1, 0.5, 0.9], 4)
    pd.testing.assert_frame_equal(
        ranking_stability(t, resamples=100, seed=3), ranking_stability(t, resamples=100, seed=3)
    )


@pytest.mark.parametrize("n", [1, 2])
def test_a_small_campaign_is_measured_at_its_own_count(n):
    st = ranking_stability(_table([0.0, 1.0, 0.5], n), sizes=(1,), resamples=50)
    assert st["attempts"].tolist() == sorted({1, n})


def test_the_escape_cli_prints_the_stability_of_a_campaign(home, env):
    cfg = {"escape_per_pair": 2, "target_class": 3, "seed": 1, "strategy": "sinvad"}
    params = {"generations": 5, "population": 6, "elites": 2}
    cid = run_campaign(parse_config({**cfg, "strategy_params": params}), home).campaign_id
    run = subprocess.run(
        [*CLI, "escape", "--campaign", cid, "--stability", "--home", str(home)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "ranking stability" in run.stdout and "extrapolated" in run.stdout
    assert "attempts per pair for a rank correlation of 0.9:" in run.stdout
    assert "18 attempts (18 searched)" in run.stdout
