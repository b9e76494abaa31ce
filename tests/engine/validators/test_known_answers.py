"""Each model-based validity filter on images where the answer is known: real MNIST test
digits score as more valid than noise, blanks and shapes, by the mean and by ROC AUC over
0.9 where that holds; where it does not (a VAE reconstructs a blank exactly), the test
pins the known failure that docs/guides/validators.md states."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from engine.core.errors import ConfigError
from engine.datasets import get_dataset
from engine.validators import VALIDATORS, check_validators, default_validators
from engine.validators import references as ref

NEW = ("vae-reconstruction", "feature-density", "classifier-confidence")


def auc(real: torch.Tensor, other: torch.Tensor) -> float:
    y = np.r_[np.ones(len(real)), np.zeros(len(other))]
    return float(roc_auc_score(y, np.r_[real.numpy(), other.numpy()]))


@pytest.fixture(scope="module")
def mnist():
    return get_dataset("mnist")


def scored(name: str, mnist, known, cache: Path, v=None) -> dict[str, torch.Tensor]:
    v = v or VALIDATORS.get(name)(None, mnist, None, cache=cache)
    lo, hi = v.score_range
    out = {
        k: v.score(getattr(known, k), known.labels) for k in ("real", "noise", "blank", "shapes")
    }
    for k, s in out.items():
        assert s.shape == (len(known.real),) and s.dtype == torch.float64, k
        assert bool(((s >= lo) & (s <= hi)).all()), k
    # The default threshold is measured on real test images: most real digits pass it.
    assert lo <= v.threshold <= hi
    assert float((out["real"] >= v.threshold).double().mean()) > 0.85
    return out


def test_vae_reconstruction_tells_digits_from_noise_and_shapes_not_blanks(mnist, known, tmp_path):
    s = scored("vae-reconstruction", mnist, known, tmp_path)
    for other in ("noise", "shapes"):
        assert s["real"].mean() > s[other].mean(), other
        assert auc(s["real"], s[other]) > 0.9, other
    # The known failure of reconstruction scores: a blank comes back exactly.
    assert s["blank"].mean() > s["real"].mean()


def test_feature_density_tells_digits_from_every_other_kind(mnist, known, tmp_path, density):
    s = scored("feature-density", mnist, known, tmp_path, density)
    for other in ("noise", "blank", "shapes"):
        assert s["real"].mean() > s[other].mean(), other
        assert auc(s["real"], s[other]) > 0.9, other


def test_classifier_confidence_is_surer_of_digits_and_judges_their_labels(mnist, known, tmp_path):
    s = scored("classifier-confidence", mnist, known, tmp_path)
    for other in ("noise", "blank", "shapes"):
        assert s["real"].mean() > s[other].mean(), other
        assert auc(s["real"], s[other]) > 0.9, other
    v = VALIDATORS.get("classifier-confidence")(None, mnist, 0.5)
    right = v.preserves(known.real, known.labels)
    wrong = v.preserves(known.real, (known.labels + 1) % 10)
    assert right.shape == (len(known.real),) and bool(((right >= 0) & (right <= 1)).all())
    assert auc(right, wrong) > 0.9 and right.mean() > 0.9 > 0.1 > wrong.mean()


def test_only_classifier_confidence_scores_label_preservation(mnist, known, density):
    vae = VALIDATORS.get("vae-reconstruction")(None, mnist, -0.5)
    for v in (vae, density):
        assert v.preserves(known.real, known.labels) is None, v.name


def test_the_independent_classifier_is_another_architecture_than_the_one_under_test(mnist):
    assert ref.independent_classifier_name("mnist", "mnist-convnet") == "mnist-lenet5"
    assert ref.independent_classifier_name("mnist", None) == "mnist-lenet5"  # default assumed
    assert ref.independent_classifier_name("mnist", "mnist-lenet5") == "mnist-convnet"
    v = VALIDATORS.get("classifier-confidence")(None, mnist, 0.5, classifier="mnist-lenet5")
    assert v.independent == "mnist-convnet"


class NoModels:
    """A dataset the zoo holds no model of."""

    name = "cifar10"


@pytest.mark.parametrize(
    ("name", "needs"),
    [
        ("vae-reconstruction", "needs a VAE of dataset 'cifar10'"),
        ("feature-density", "needs the default classifier of dataset 'cifar10'"),
        ("classifier-confidence", "needs two classifiers of dataset 'cifar10'"),
    ],
)
def test_a_dataset_without_the_model_is_refused_in_one_line(name, needs):
    with pytest.raises(ConfigError, match=needs) as e:
        check_validators({name: None}, None, NoModels())
    assert "\n" not in str(e.value) and "train" in str(e.value)


def test_new_filters_run_when_named_not_by_default():
    """A differential campaign's inputs are valid when they pass every filter run: the new
    filters are named to run, and leave the default set (and its verdicts) as it was."""
    assert set(NEW) <= set(VALIDATORS.names())
    gan = type("GAN", (), {"realness": None, "family": "gan"})()
    assert set(default_validators(gan)) == {"discriminator", "ssim-nearest"}
