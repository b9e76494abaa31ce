"""A tiny image folder (3 classes, 32x32 RGB, PNG and JPEG, plus files to reject) and tiny
user models for it, written by tests: nothing is downloaded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image

CLASSES = ("cat", "dog", "fox")


def write_folder(root: Path, per_class: int = 6, seed: int = 0, rejects: bool = True) -> Path:
    """`per_class` random 32x32 RGB images per class, odd ones PNG, even ones JPEG; with
    `rejects`, also a grey 40x30 PNG in fox, a top-level file, a text file, a corrupt JPEG,
    an empty PNG and an empty class folder."""
    rng = np.random.default_rng(seed)
    for c in CLASSES:
        (root / c).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            a = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
            Image.fromarray(a).save(root / c / f"{i}.{'png' if i % 2 else 'jpg'}")
    if rejects:
        Image.fromarray(rng.integers(0, 256, (30, 40), dtype=np.uint8)).save(root / "fox/g.png")
        (root / "readme.txt").write_text("not an image")
        (root / "cat" / "notes.txt").write_text("not an image either")
        (root / "cat" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0" + b"garbage" * 10)
        (root / "dog" / "zero.png").write_bytes(b"")
        (root / "empty").mkdir()
    return root


#: What write_folder's rejects are, by path relative to the folder, and a word of the reason.
REJECTED = {
    "readme.txt": "top level",
    "cat/notes.txt": "not a PNG or JPEG",
    "cat/broken.jpg": "corrupt",
    "dog/zero.png": "empty file",
    "empty": "without PNG or JPEG",
}


def save_tiny_models(
    models: Path,
    dataset: str,
    shape,
    classes: int,
    fingerprint: str | None,
    prefix: str | None = None,
    predict: int = 0,
) -> tuple[str, str]:
    """A tiny VAE and a ConvNet saved with cards under `models` (a user models folder);
    returns their names. The classifier always predicts class `predict`, so seeds of that
    class are viable and searched to the last generation."""
    from engine.classifiers.zoo_nets import ConvNet
    from engine.generators import GENERATORS
    from engine.models import zoo

    prefix = prefix or dataset
    extra = {} if fingerprint is None else {"dataset_fingerprint": fingerprint}
    torch.manual_seed(0)
    vae = GENERATORS.get("vae")(tuple(shape), classes, hidden=16, latent=4)
    zoo.save_model(
        vae,
        {
            "name": f"{prefix}-vae",
            "kind": "generator",
            "family": "vae",
            "dataset": dataset,
            "default": True,
            "params": {
                "image_shape": list(shape),
                "num_classes": classes,
                "hidden": 16,
                "latent": 4,
            },
            "latent_shape": [4],
            "latent_bounds": [-3.0, 3.0],
            "parameters": sum(p.numel() for p in vae.parameters()),
            **extra,
        },
        models,
        fp16=False,
    )
    clf = ConvNet(shape[0], classes, shape[1])
    last = clf.head[-1]
    torch.nn.init.zeros_(last.weight)
    with torch.no_grad():
        last.bias.zero_()[predict] = 5.0
    zoo.save_model(
        clf,
        {
            "name": f"{prefix}-convnet",
            "kind": "classifier",
            "architecture": "convnet",
            "dataset": dataset,
            "default": True,
            "params": {"in_channels": shape[0], "num_classes": classes, "side": shape[1]},
            "parameters": sum(p.numel() for p in clf.parameters()),
            **extra,
        },
        models,
        fp16=False,
    )
    return f"{prefix}-vae", f"{prefix}-convnet"
