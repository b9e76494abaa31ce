"""Realism (engine/campaign/realism.py): FID and KID in the default classifier's
penultimate features. One half of the real test split is far closer to the other half
than noise or shapes are; a campaign's figures are stored at its close, with their
reference cached in the home."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.campaign import realism
from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.datasets import get_dataset
from engine.validators import references as ref
from store import Store
from store import metrics as sm
from tests.engine.validators.conftest import shapes


@pytest.fixture(scope="module")
def features():
    clf = ref.classifier("mnist-convnet", get_dataset("mnist"), "cpu")
    test = get_dataset("mnist").load("test")
    g = torch.Generator().manual_seed(0)
    noise = torch.randint(0, 256, (200, 1, 28, 28), generator=g, dtype=torch.uint8)
    with torch.inference_mode():
        return {
            "a": ref.penultimate(clf, test.images[0::2][:200]).numpy(),
            "b": ref.penultimate(clf, test.images[1::2][:200]).numpy(),
            "noise": ref.penultimate(clf, noise).numpy(),
            "shapes": ref.penultimate(clf, shapes(200)).numpy(),
        }


def test_the_test_split_is_far_closer_to_itself_than_noise_or_shapes(features):
    f = features
    same = realism.distances(f["a"], f["b"], seed=0)
    for other in ("noise", "shapes"):
        far = realism.distances(f[other], f["b"], seed=0)
        assert far["fid"] > 10 * same["fid"], other
        assert far["kid"] > 10 * max(same["kid"], 1e-3), other
    assert same["images"] == same["reference_images"] == 200 and same["dim"] == 128
    assert same["kid_subset"] == 200 and same["note"] == "classifier features, not Inception"


def test_fid_matches_the_closed_form_of_two_gaussians():
    """FID of samples of N(0, I) and N(m, 4 I) in d dimensions tends to |m|^2 + d (2 - 1)^2
    (Tr(I + 4I - 2 * 2I) = d)."""
    rng = np.random.default_rng(0)
    d = 4
    a = rng.standard_normal((20000, d))
    b = 2 * rng.standard_normal((20000, d)) + 1.0
    assert realism.frechet(a, b) == pytest.approx(d * 1.0 + d, rel=0.03)
    assert realism.frechet(a, a) == pytest.approx(0.0, abs=1e-6)
    assert realism.frechet(a[:1], b) is None  # no covariance of one image


def test_kid_is_unbiased_near_zero_for_one_distribution():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((400, 8)), rng.standard_normal((400, 8))
    kid, sd, m = realism.kernel_distance(a, b, seed=0, subsets=20, size=200)
    assert m == 200 and abs(kid) < 3 * sd
    assert realism.kernel_distance(a[:1], b, seed=0) == (None, None, 0)


def test_a_campaign_close_stores_its_realism_and_caches_the_reference(tmp_path, monkeypatch):
    monkeypatch.setattr(realism, "REFERENCE_IMAGES", 200)  # of MNIST's 1,000
    cfg = parse_config({"seeds": 3, "seed": 2, "strategy_params": {"generations": 2}})
    realism._REFERENCE.clear()  # the first close of a process computes the reference
    cid = run_campaign(cfg, tmp_path).campaign_id
    store = Store(tmp_path / "latentfuzz.duckdb")
    got = sm.metrics(store, cid)["realism"]
    assert got["images"] == len(sm.realism_images(store, cid)) == 3
    assert got["reference_images"] == 200 and got["features"] == "penultimate of mnist-convnet"
    assert got["fid"] > 0 and got["note"] == "classifier features, not Inception"
    (cached,) = (tmp_path / "cache" / "realism").glob("*.npy")
    assert np.load(cached).shape == (200, 128)
    table = sm.realism_table(store, [cid, "not-a-campaign"])
    assert table["campaign_id"].tolist() == [cid] and table["generator"].tolist() == ["mnist-vae"]
    assert table["fid"].iloc[0] == pytest.approx(got["fid"])


def test_a_new_home_reads_the_reference_from_the_users_cache(tmp_path, monkeypatch):
    """Homes share the reference features through the user's cache: a second home
    classifies no reference image again, and keeps a copy of its own."""
    from engine.datasets import get_dataset
    from engine.validators import references as ref

    monkeypatch.setattr(realism, "REFERENCE_IMAGES", 200)
    monkeypatch.setattr(realism, "user_cache", lambda: tmp_path / "user")
    ds = get_dataset("mnist")
    clf = ref.classifier("mnist-convnet", ds, "cpu")
    calls: list[int] = []
    real = ref.penultimate
    monkeypatch.setattr(ref, "penultimate", lambda c, x: calls.append(len(x)) or real(c, x))
    realism._REFERENCE.clear()
    a, _ = realism.reference_features("mnist-convnet", clf, ds, tmp_path / "one" / "cache")
    realism._REFERENCE.clear()  # a new process
    b, _ = realism.reference_features("mnist-convnet", clf, ds, tmp_path / "two" / "cache")
    assert calls == [200]
    np.testing.assert_array_equal(a, b)
    assert len(list((tmp_path / "two" / "cache" / "realism").glob("*.npy"))) == 1
