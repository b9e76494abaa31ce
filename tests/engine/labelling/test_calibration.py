"""Calibration of a validity filter against people (engine/labelling/calibration.py),
checked against scikit-learn on constructed cases and by hand on ties and one class."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import (
    balanced_accuracy_score,
    cohen_kappa_score,
    precision_score,
    recall_score,
    roc_auc_score,
)

from engine.core.errors import LatentfuzzError
from engine.labelling.agreement import bootstrap_ci
from engine.labelling.calibration import (
    CannotCalibrate,
    auc,
    auc_ci,
    best_threshold,
    calibrate,
    headline,
    sure_sides,
)


def _case(seed: int, n: int = 120, ties: bool = False):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.6
    s = rng.normal(size=n) + 1.2 * y
    if ties:
        s = np.round(s, 1)  # many equal scores, across both classes
    return s, y


@pytest.mark.parametrize("seed,ties", [(0, False), (1, True), (2, False), (3, True)])
def test_the_figures_match_scikit_learn(seed, ties):
    s, y = _case(seed, ties=ties)
    c = calibrate(s, np.array(list(y), dtype=object), seed=4, resamples=200)
    assert c.n == len(s) and c.positives == int(y.sum())
    assert c.auc == pytest.approx(roc_auc_score(y, s))
    pred = s >= c.threshold
    assert c.balanced_accuracy == pytest.approx(balanced_accuracy_score(y, pred))
    assert c.precision == pytest.approx(precision_score(y, pred))
    assert c.recall == pytest.approx(recall_score(y, pred))
    assert c.kappa == pytest.approx(cohen_kappa_score(y, pred))
    # No threshold does better (every distinct score tried by brute force).
    best = max(balanced_accuracy_score(y, s >= t) for t in np.unique(s))
    assert c.balanced_accuracy == pytest.approx(best)
    assert c.auc_ci.low <= c.auc <= c.auc_ci.high and c.auc_ci.resamples == 200


@pytest.mark.parametrize("ties", [False, True])
def test_the_ranked_bootstrap_is_the_studies_bootstrap_of_the_auc(ties):
    """auc_ci ranks resamples a block at a time; it must be agreement.bootstrap_ci of
    the AUC, resample for resample (one-class resamples left out by both)."""
    s, y = _case(8, n=6, ties=ties)  # small: some resamples hold one class only
    want = bootstrap_ci(
        np.stack([s, y], 1), lambda p: auc(p[:, 0], p[:, 1].astype(bool)), 300, seed=5
    )
    got = auc_ci(s, y, 300, seed=5, block=7)
    assert 150 < want.defined < 300
    assert got.defined == want.defined and got.resamples == 300
    assert (got.low, got.high) == pytest.approx((want.low, want.high))


def test_the_bootstrap_interval_is_seeded():
    s, y = _case(5)
    v = np.array(list(y), dtype=object)
    a, b = calibrate(s, v, seed=1, resamples=100), calibrate(s, v, seed=1, resamples=100)
    assert a.auc_ci == b.auc_ci
    assert calibrate(s, v, seed=2, resamples=100).auc_ci != a.auc_ci


def test_labels_saved_at_95_percent_precision_follow_the_stated_definition():
    s, y = _case(6, n=300)
    accept_at, accepted, reject_at, rejected = sure_sides(s, y)
    # accept_at: the lowest score whose "at or above" set is at least 95% valid.
    ok = [t for t in np.unique(s) if y[s >= t].mean() >= 0.95]
    assert accept_at == min(ok) and accepted == int((s >= accept_at).sum())
    # reject_at: the highest score below accept_at whose "at or below" set is >= 95% invalid.
    ok = [t for t in np.unique(s) if t < accept_at and (~y[s <= t]).mean() >= 0.95]
    assert reject_at == max(ok) and rejected == int((s <= reject_at).sum())
    assert precision_score(y, s >= accept_at) >= 0.95
    assert precision_score(~y, s <= reject_at) >= 0.95
    c = calibrate(s, np.array(list(y), dtype=object), resamples=100)
    assert c.decides == accepted + rejected <= c.n  # disjoint sets, each image once


def test_a_perfect_filter_decides_every_image_and_a_useless_one_none():
    y = np.array([False] * 5 + [True] * 5)
    perfect = calibrate(np.arange(10.0), y.astype(object), resamples=100)
    assert (perfect.auc, perfect.kappa, perfect.decides) == (1.0, 1.0, 10)
    assert perfect.threshold == 5.0 and perfect.precision == perfect.recall == 1.0
    flat = calibrate(np.zeros(10), y.astype(object), resamples=100)
    assert flat.auc == 0.5 and flat.decides == 0 and flat.kappa == 0.0
    assert flat.balanced_accuracy == 0.5


def test_ties_count_half_by_hand():
    # One valid and one invalid image at the same score: AUC 0.5, as Mann-Whitney says.
    assert auc(np.array([1.0, 1.0]), np.array([True, False])) == 0.5
    assert auc(np.array([1.0, 1.0, 2.0]), np.array([False, True, True])) == 0.75
    # Equal maxima of balanced accuracy: the highest threshold is the one chosen.
    t, bal = best_threshold(np.array([0.0, 1.0, 2.0, 3.0]), np.array([False, True, False, True]))
    assert bal == 0.75 and t == 3.0


def test_undecided_and_unscored_images_are_left_out_and_counted():
    s = np.array([0.1, 0.9, 0.2, 0.8, math.nan, 0.5])
    v = np.array([False, True, False, True, True, None], dtype=object)
    c = calibrate(s, v, resamples=100)
    assert (c.n, c.undecided, c.unscored) == (4, 1, 1)
    assert c.auc == 1.0


@pytest.mark.parametrize(
    "verdicts,says",
    [
        ([True, True, True], "cannot calibrate: all 3 decided images are valid;"),
        ([False, False, False], "cannot calibrate: all 3 decided images are invalid;"),
        ([None, None, None], "cannot calibrate: no image has both a score and a decided"),
    ],
)
def test_one_class_only_is_a_one_line_refusal_not_a_crash(verdicts, says):
    with pytest.raises(CannotCalibrate) as e:
        calibrate(np.array([0.1, 0.5, 0.9]), np.array(verdicts, dtype=object))
    assert isinstance(e.value, LatentfuzzError)
    assert str(e.value).startswith(says) and "\n" not in str(e.value)


def test_preservation_refusals_say_preserved():
    with pytest.raises(CannotCalibrate, match="all 2 decided images are preserved"):
        calibrate(np.array([0.1, 0.5]), np.array([True, True], dtype=object), what="preservation")


def test_the_headline_reads_as_the_issue_asks():
    y = np.array([False] * 5 + [True] * 5)
    c = calibrate(np.arange(10.0), y.astype(object), resamples=100)
    assert headline("vae-reconstruction", c) == (
        "vae-reconstruction agrees with people at kappa 1.00; at 95% precision it decides "
        "10 of 10 images"
    )
