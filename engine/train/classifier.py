"""`latentfuzz train classifier`: train a zoo classifier and write its weights and card."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from engine import zoo
from engine.classifiers import ARCHITECTURES
from engine.train.common import accuracy, batches, ms_per_image, progress_bar, record, stamp, start


def shift(x: torch.Tensor, pixels: int, rng: torch.Generator) -> torch.Tensor:
    """Random translation by up to `pixels` in each direction (pad then crop), per image."""
    if pixels == 0:
        return x
    n, _, h, w = x.shape
    padded = F.pad(x, (pixels,) * 4)
    dx = torch.randint(0, 2 * pixels + 1, (n,), generator=rng)
    dy = torch.randint(0, 2 * pixels + 1, (n,), generator=rng)
    rows = (dy[:, None] + torch.arange(h))[:, :, None]
    cols = (dx[:, None] + torch.arange(w))[:, None, :]
    return padded[torch.arange(n)[:, None, None], :, rows, cols].permute(0, 3, 1, 2)


def train_classifier(
    dataset: str = "mnist",
    architecture: str = "convnet",
    epochs: int = 20,
    batch_size: int = 64,
    lr: float = 2e-3,
    augment_shift: int = 2,
    seed: int = 0,
    name: str | None = None,
    out: Path | None = None,
    default: bool = False,
    data_dir: str | None = None,
    fp16: bool = True,
) -> dict[str, Any]:
    rng, ds, train = start(seed, dataset, data_dir)
    test = ds.load("test")
    params = {"in_channels": ds.shape[0], "num_classes": ds.num_classes, "side": ds.shape[1]}
    model = ARCHITECTURES.get(architecture)(**params)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    steps = epochs * -(-len(train) // batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
    t0 = time.perf_counter()
    with progress_bar(f"train {architecture} on {dataset}", epochs) as advance:
        for _ in range(epochs):
            model.train()
            total = 0.0
            for idx in batches(len(train), batch_size, rng):
                x = shift(train.images[idx], augment_shift, rng)
                loss = F.cross_entropy(model(x), train.labels[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                total += float(loss.detach()) * len(idx)
            model.eval()
            advance(loss=total / len(train), test_acc=accuracy(model, test.images, test.labels))
    seconds = time.perf_counter() - t0
    name = name or f"{dataset}-{architecture}"
    card: dict[str, Any] = {
        "name": name,
        "kind": "classifier",
        "architecture": architecture,
        "dataset": dataset,
        "default": default,
        "params": params,
        "parameters": sum(p.numel() for p in model.parameters()),
        "training": record(
            ds,
            train,
            seconds,
            seed=seed,
            epochs=epochs,
            batch_size=batch_size,
            lr=lr,
            optimizer="AdamW + OneCycle",
            augment_shift_px=augment_shift,
        ),
        **stamp(),
    }
    folder = zoo.save_model(model, card, out, fp16=fp16)
    # Quality of what was stored (fp16 weights), not of the in-memory model.
    clf = zoo.load_classifier(name, dataset, root=out)
    card = zoo.load_card(name, out)
    card["metrics"] = {
        "test_accuracy": accuracy(clf.logits, test.images, test.labels),
        "test_images": len(test),
    }
    probe = test.images[:25]
    card["inference"] = {
        f"ms_per_image_b{b}": round(ms_per_image(lambda n: clf.logits(probe[:n]), b), 4)
        for b in (1, 25)
    }
    (folder / zoo.CARD).write_text(__import__("json").dumps(card, indent=2) + "\n")
    return card
