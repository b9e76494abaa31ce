"""Verdict rules and agreement statistics, checked against independent implementations."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from engine.labelling.agreement import (
    INVALID,
    OTHER,
    UNSURE,
    bootstrap_ci,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    preservation,
    sample_size,
    validity,
)


@pytest.mark.parametrize(
    "answers, expected",
    [
        ([3, 7], True),
        ([INVALID, INVALID], False),
        ([3, INVALID], None),
        ([3, UNSURE], None),
        ([OTHER, 3], True),
        ([OTHER, INVALID], None),
    ],
)
def test_icst_validity(answers, expected):
    assert validity(answers) is expected


# The study's own files decide preservation "no" whenever both answers differ from the
# expected class and not both say invalid: one "invalid" plus one other class is "no".
@pytest.mark.parametrize(
    "answers, expected",
    [
        ([7, 7], True),
        ([1, 2], False),
        ([7, 1], None),
        ([1, INVALID], False),
        ([INVALID, 1], False),
        ([INVALID, INVALID], None),
        ([7, INVALID], None),
        ([7, UNSURE], None),
        ([1, UNSURE], None),
        ([OTHER, 1], False),
        ([OTHER, INVALID], False),
        ([OTHER, 7], None),
        ([OTHER, OTHER], False),
    ],
)
def test_icst_label_preservation(answers, expected):
    assert preservation(answers, expected=7) is expected


def test_majority_counts_other_class_answers_as_not_preserved():
    assert preservation([OTHER, OTHER, 7], 7, rule="majority") is False
    assert preservation([OTHER, 7, 7], 7, rule="majority") is True
    assert validity([OTHER, OTHER, INVALID], rule="majority") is True


def test_majority_vote_needs_three_and_settles_splits():
    assert validity([3, 4, INVALID], rule="majority") is True
    assert validity([INVALID, INVALID, 2], rule="majority") is False
    assert preservation([7, 7, 1], 7, rule="majority") is True
    assert preservation([1, 2, 7], 7, rule="majority") is False
    assert preservation([7, INVALID, 1], 7, rule="majority") is None
    with pytest.raises(ValueError, match="at least 3"):
        validity([1, 2], rule="majority")


def test_cohen_kappa_matches_scikit_learn():
    rng = np.random.default_rng(0)
    a = rng.integers(-1, 10, 200)
    b = np.where(rng.random(200) < 0.7, a, rng.integers(-1, 10, 200))
    assert cohen_kappa(a.tolist(), b.tolist()) == pytest.approx(cohen_kappa_score(a, b))
    # Textbook: 50 items, yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> kappa 0.4.
    a = [1] * 25 + [0] * 25
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_fleiss_kappa_matches_statsmodels():
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 4, 60)
    ratings = np.where(rng.random((60, 5)) < 0.6, truth[:, None], rng.integers(0, 4, (60, 5)))
    counts, _ = aggregate_raters(ratings)
    assert fleiss_kappa(counts) == pytest.approx(sm_fleiss(counts))


def test_krippendorff_alpha_matches_the_reference_package_with_missing_data():
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 5, 40)
    data = np.where(rng.random((4, 40)) < 0.7, truth, rng.integers(0, 5, (4, 40))).astype(float)
    data[rng.random((4, 40)) < 0.2] = np.nan
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert krippendorff_alpha(data) == pytest.approx(ref)


def test_bootstrap_ci_is_seeded_and_brackets_the_mean():
    x = np.r_[np.ones(70), np.zeros(30)]
    lo, hi, _, _ = bootstrap_ci(x, seed=5)
    assert (lo, hi) == bootstrap_ci(x, seed=5)[:2]
    assert lo < 0.7 < hi and hi - lo < 0.25
    y = np.random.default_rng(0).normal(size=50)  # continuous: the seed shows in the bounds
    assert bootstrap_ci(y, seed=1) == bootstrap_ci(y, seed=1) != bootstrap_ci(y, seed=2)
    assert bootstrap_ci(x).complete


def _ratio(a: np.ndarray) -> float:
    valid = a[:, 0].sum()
    return a[:, 1].sum() / valid if valid else float("nan")


def test_bootstrap_ci_leaves_out_resamples_where_the_statistic_is_undefined():
    # One valid image in 12: (11/12)^12 = 35% of resamples hold none, so preserved/valid
    # is NaN there. Wave 1 let one NaN make the whole interval n/a.
    pairs = np.zeros((12, 2))
    pairs[0] = [1, 1]
    ci = bootstrap_ci(pairs, _ratio, resamples=1000, seed=0)
    assert 550 < ci.defined < 750 and not ci.complete
    assert ci.low == ci.high == 1.0  # every defined resample preserves the one valid image
    assert "of 1000 resamples" in ci.describe()
    # Defined in fewer resamples than asked for: no interval, and the reason is given.
    strict = bootstrap_ci(pairs, _ratio, resamples=1000, seed=0, min_defined=0.8)
    assert np.isnan(strict.low) and strict.defined == ci.defined
    assert strict.describe() == f"n/a (defined in {ci.defined} of 1000 resamples)"
    assert np.isnan(bootstrap_ci(np.zeros((5, 2)), _ratio, resamples=100).low)


def test_sample_size_planner():
    assert sample_size(10_000) == 370  # Cochran, 95% confidence, 5% margin, with FPC
    assert sample_size(100) == 80
    assert sample_size(10) == 10
    with pytest.raises(ValueError, match="population"):
        sample_size(0)
