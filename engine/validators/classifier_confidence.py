"""An independent classifier's confidence as a validity filter: the weakest baseline,
which the other filters have to beat.

The score is the maximum softmax probability of a zoo classifier of the dataset other than
the campaign's classifier under test (engine/validators/references.py
`independent_classifier_name`: another architecture first, so for MNIST mnist-lenet5 when
mnist-convnet is under test, and mnist-convnet when mnist-lenet5 is). Without a classifier
named, the one under test is taken to be the dataset's default. Scores lie in [0, 1].

Confidence is a poor validity signal: a classifier can be sure of a blob. It does judge
label preservation (`preserves`): the independent classifier's probability of the label
the image was meant to keep.

The default threshold is the score 95% of the real test split (up to 2,000 evenly spaced
images) reaches: 0.68 for mnist-lenet5 on MNIST's 1,000 test images (median 0.99).
"""

from __future__ import annotations

import torch

from engine.validators import references as ref
from engine.validators.base import VALIDATORS, Validator


@VALIDATORS.register("classifier-confidence")
class ClassifierConfidence(Validator):
    name = "classifier-confidence"
    default_threshold = float("nan")  # measured on the real test split unless given
    describes = "an independent classifier's highest softmax probability"
    score_range = (0.0, 1.0)
    by_default = False

    @classmethod
    def check(cls, generator, dataset=None) -> str | None:
        if dataset is None:
            return None
        names = [c["name"] for c in ref.cards("classifier", dataset.name)]
        if len(names) < 2:
            return (
                f"validity filter 'classifier-confidence' needs two classifiers of dataset "
                f"{dataset.name!r} (one independent of the one under test); the zoo has "
                f"{', '.join(names) or 'none'}: train another with `latentfuzz train "
                f"classifier --dataset {dataset.name}`, or pick another filter"
            )
        return None

    def __init__(self, generator, dataset, threshold: float | None = None, **context) -> None:
        super().__init__(generator, dataset, threshold, **context)
        name = ref.independent_classifier_name(dataset.name, self.classifier_under_test)
        self.independent = ref.require(
            name,
            "classifier-confidence needs a classifier independent of "
            f"{self.classifier_under_test or 'the default one'}",
            dataset.name,
            f"train one with `latentfuzz train classifier --dataset {dataset.name}`",
        )
        self.clf = ref.classifier(self.independent, dataset, ref.device_of(generator))
        if threshold is None:
            images, labels = ref.spaced(dataset.load("test"))
            self.threshold = ref.kept_quantile(self.score(images, labels))

    def probabilities(self, images: torch.Tensor) -> torch.Tensor:
        return ref.logits(self.clf, images).double().softmax(1)

    def score(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if not len(images):
            return torch.zeros(0, dtype=torch.float64)
        return self.probabilities(images).amax(1)

    def preserves(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The independent classifier's probability (N,) of each image's expected label."""
        if not len(images):
            return torch.zeros(0, dtype=torch.float64)
        return self.probabilities(images).gather(1, labels.long()[:, None]).squeeze(1)
