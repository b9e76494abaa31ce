"""Argus's figures per lambda (store/interpolation.py) on a hand-made store: every figure
computed by hand from the rows below, per lambda and pooled, and the notes for figures a
campaign did not measure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from store import Store
from store.interpolation import per_lambda, unmeasured

CID = "argus"
LAMBDAS = {1: 0.1, 2: 0.3}

#: (seed_idx, seed_label, viable): seed 2 is not viable, and its rows must not count.
SEEDS = [(0, 1, True), (1, 2, True), (2, 0, False)]

#: seed_idx -> generation -> the predictions of its images at that lambda.
PREDS = {
    0: {1: [1, 1, 1, 1], 2: [3, 3, 5, 1]},  # lambda 0.1: none wrong; 0.3: 3 wrong, {3, 5}
    1: {1: [2, 7, 2, 2], 2: [4, 5, 6, 2]},  # 0.1: 1 wrong, {7}; 0.3: 3 wrong, {4, 5, 6}
    2: {1: [9, 9, 9, 9], 2: [9, 9, 9, 9]},  # not viable
}

#: The images' MSE and SSIM per generation, as a finished campaign stores them.
PER_GENERATION = [
    {
        "generation": 1,
        "step": 0.1,
        "evaluations": 8,
        "error_rate": 0.125,
        "mean_mse": 0.01,
        "mean_ssim": 0.9,
        "mean_mse_original": 0.02,
        "mean_ssim_original": 0.8,
    },
    {
        "generation": 2,
        "step": 0.3,
        "evaluations": 8,
        "error_rate": 0.75,
        "mean_mse": 0.03,
        "mean_ssim": 0.7,
        "mean_mse_original": 0.05,
        "mean_ssim_original": 0.6,
    },
]


def make(store: Store, cid: str, per_generation: list[dict] | None, individuals: bool = True):
    with store.write() as con:
        for seed, label, viable in SEEDS:
            con.execute(
                "INSERT INTO seeds (campaign_id, seed_idx, source_index, seed_label, seed_pred, "
                "seed_margin, viable, status) VALUES (?, ?, ?, ?, ?, 1.0, ?, 'survived')",
                [cid, seed, 100 + seed, label, label, viable],
            )
            if not viable:
                continue
            for g, lam in LAMBDAS.items():
                con.execute(
                    "INSERT INTO generations (campaign_id, seed_idx, generation, best_fitness, "
                    "mean_fitness, best_pred, top1_label, top1_prob, top2_label, top2_prob, "
                    "step, evaluations, elapsed_s) "
                    "VALUES (?, ?, ?, 0, 0, 0, 0, 0.5, 1, 0.4, ?, ?, 0)",
                    [cid, seed, g, lam, 4 * g],
                )
        if individuals:
            for seed, gens in PREDS.items():
                for g, preds in gens.items():
                    for slot, pred in enumerate(preds):
                        con.execute(
                            "INSERT INTO individuals (campaign_id, seed_idx, generation, "
                            "individual, fitness, pred, evaluated) VALUES (?, ?, ?, ?, 0, ?, "
                            "true)",
                            [cid, seed, g, slot, pred],
                        )
            # A survivor carried without a new evaluation is no generated image.
            con.execute(
                "INSERT INTO individuals (campaign_id, seed_idx, generation, individual, "
                "fitness, pred, evaluated) VALUES (?, 0, 2, 4, 0, 8, false)",
                [cid],
            )
        if per_generation is not None:
            con.execute(
                "INSERT INTO campaign_metrics (campaign_id, evaluations, failing_evaluations, "
                "result_gaps, test_gaps, per_generation) VALUES (?, 16, 7, '[]', '[]', ?)",
                [cid, json.dumps(per_generation)],
            )


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "latentfuzz.duckdb")
    make(s, CID, PER_GENERATION)
    # Another campaign's rows, all wrong, must not leak into CID's figures.
    other = [{**r, "mean_mse_original": 1.0} for r in PER_GENERATION]
    make(s, "other", other)
    with s.write() as con:
        con.execute("UPDATE individuals SET pred = 0 WHERE campaign_id = 'other'")
    return s


def test_each_lambda_has_its_own_er_sr_and_label_diversity(store: Store):
    df = per_lambda(store, CID)
    assert df["pooled"].tolist() == [False, False, True]
    lam1, lam3, pooled = df.to_dict("records")
    assert lam1["lambda"] == pytest.approx(0.1) and lam3["lambda"] == pytest.approx(0.3)
    # lambda 0.1: 1 of 8 images wrong; seed 1 has a failure, seed 0 none; seed 1 reaches
    # one wrong label (7), seed 0 none.
    assert (lam1["seeds"], lam1["evaluations"], lam1["failing"]) == (2, 8, 1)
    assert lam1["error_rate"] == pytest.approx(1 / 8)
    assert lam1["success_rate"] == pytest.approx(1 / 2)
    assert lam1["label_diversity"] == pytest.approx((0 + 1) / 2)
    # lambda 0.3: 6 of 8 wrong; both seeds fail; {3, 5} and {4, 5, 6}.
    assert (lam3["seeds"], lam3["evaluations"], lam3["failing"]) == (2, 8, 6)
    assert lam3["error_rate"] == pytest.approx(6 / 8)
    assert lam3["success_rate"] == pytest.approx(1.0)
    assert lam3["label_diversity"] == pytest.approx((2 + 3) / 2)
    # Pooled over both lambdas, as the campaign-level figures are: diversity counts a
    # seed's wrong labels over the whole grid ({3, 5} and {7, 4, 5, 6}), which no single
    # lambda reaches.
    assert (pooled["seeds"], pooled["evaluations"], pooled["failing"]) == (2, 16, 7)
    assert pooled["error_rate"] == pytest.approx(7 / 16)
    assert pooled["success_rate"] == pytest.approx(1.0)
    assert pooled["label_diversity"] == pytest.approx((2 + 4) / 2)


def test_mse_and_ssim_to_the_original_and_to_the_decoded_seed_apart(store: Store):
    df = per_lambda(store, CID)
    assert df["mse_original"].tolist() == pytest.approx([0.02, 0.05, 0.035])
    assert df["ssim_original"].tolist() == pytest.approx([0.8, 0.6, 0.7])
    assert df["mse_seed"].tolist() == pytest.approx([0.01, 0.03, 0.02])
    assert df["ssim_seed"].tolist() == pytest.approx([0.9, 0.7, 0.8])
    assert unmeasured(df) == []


def test_what_a_campaign_did_not_measure_is_empty_and_said(tmp_path: Path):
    s = Store(tmp_path / "latentfuzz.duckdb")
    # Running (no metrics row yet): ER, SR and diversity already, images at the end.
    make(s, "running", None)
    df = per_lambda(s, "running")
    assert df["error_rate"].tolist() == pytest.approx([1 / 8, 6 / 8, 7 / 16])
    assert df["mse_original"].isna().all() and df["mse_seed"].isna().all()
    assert unmeasured(df) == ["MSE and SSIM: stored when the campaign finishes."]
    # Finished before originals were measured: the decoded-seed figures only.
    old = [{k: v for k, v in r.items() if not k.endswith("_original")} for r in PER_GENERATION]
    make(s, "old", old)
    df = per_lambda(s, "old")
    assert df["mse_seed"].tolist() == pytest.approx([0.01, 0.03, 0.02])
    assert df["mse_original"].isna().all()
    assert any("to the original image: not measured" in n for n in unmeasured(df))
    # No individuals rows: no ER, SR or diversity, and the note says why.
    make(s, "bare", PER_GENERATION, individuals=False)
    df = per_lambda(s, "bare")
    assert df["lambda"].tolist()[:2] == pytest.approx([0.1, 0.3])
    assert df["error_rate"].isna().all()
    assert any("record_individuals off" in n for n in unmeasured(df))
    # A campaign with no rows at all: nothing.
    assert per_lambda(s, "nothing").empty
