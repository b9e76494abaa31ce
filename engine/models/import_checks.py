"""What `models import` runs of an imported model: loading it, its validation probes and
the card's measurements. Each function runs in a child process (engine/models/limited.py),
every call to the model timed as one answer, and returns the card's measured fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from engine.classifiers import FORMATS
from engine.classifiers.onnx import parameter_count
from engine.datasets import get_dataset
from engine.datasets.base import DatasetError
from engine.generators.torchscript import TorchScriptGenerator
from engine.models import zoo
from engine.models.limited import answering, timed
from engine.models.measure import (
    accuracy,
    inference_ms,
    latent_bounds,
    ms_per_image,
    reference_seeds,
    viability,
)


def _test_metrics(ds, predict) -> dict[str, Any]:
    """Test accuracy where the dataset's test split loads; otherwise why not."""
    try:
        test = ds.load("test")
    except (DatasetError, OSError) as e:
        return {"test_accuracy_skipped": f"the {ds.name} test split did not load: {e}"}
    return {"test_accuracy": accuracy(predict, test.images, test.labels), "test_images": len(test)}


def check_classifier(path: Path, fmt: str, dataset: str, data_dir: str | None) -> dict[str, Any]:
    """Load and validate the stored classifier file, then measure it: parameters, test
    accuracy and milliseconds per image at batch 1 and 25."""
    ds = get_dataset(dataset, data_dir)
    with answering():
        clf = FORMATS.get(fmt)(path, ds.shape, ds.num_classes, dataset)
    if fmt == "onnx":
        parameters = parameter_count(path)
    else:
        parameters = sum(p.numel() for p in clf.module.parameters())
    logits = timed(clf.logits)
    probe = torch.rand((25, *ds.shape), generator=torch.Generator().manual_seed(0))
    return {
        "parameters": int(parameters),
        "metrics": _test_metrics(ds, logits),
        "inference": {
            f"ms_per_image_b{b}": round(ms_per_image(lambda n: logits(probe[:n]), b), 4)
            for b in (1, 25)
        },
    }


def check_generator(
    params: dict[str, Any], folder: Path, dataset: str, classifier: str
) -> dict[str, Any]:
    """Load and validate the stored decoder, then measure it with `classifier`: latent
    bounds, viability and milliseconds per image."""
    gen = TorchScriptGenerator(**params)
    with answering():
        gen.load_weights(folder)
        gen.check()
    gen.decode = timed(gen.decode)
    clf = zoo.load_classifier(classifier, dataset)
    clf.logits = timed(clf.logits)
    z, labels = reference_seeds(gen, dataset)
    with gen.seeding():
        share = viability(gen, z, labels, clf)
    return {
        "parameters": sum(p.numel() for p in gen.parameters()),
        "bounds": latent_bounds(z),
        "viability": share,
        "viability_seeds": len(z),
        "inference": inference_ms(gen),
    }
