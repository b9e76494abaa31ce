"""`latentfuzz train classifier`: train a zoo classifier and write its weights and card."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import torch
import torch.nn.functional as F

from engine.classifiers import ARCHITECTURES
from engine.core.errors import ConfigError
from engine.datasets import get_dataset
from engine.models import zoo
from engine.models.measure import accuracy, ms_per_image
from engine.models.provenance import stamp
from engine.train.common import (
    auto_default,
    batches,
    data_fields,
    default_architecture,
    destination,
    record,
    start,
    steps_per_epoch,
)
from engine.train.loop import TrainRun, resolve_device
from engine.train.settings import Pollution, TrainSettings

#: Architectures of the original MNIST zoo take no width; the generic ones do.
WIDTH_DEFAULT = {"vgg": 32, "resnet": 32}


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
    # Contiguous: the gather leaves a channels-last layout, on which torch 2.13's CPU
    # backward through the ResNet crashes (double free); with one channel it is a no-op.
    return padded[torch.arange(n)[:, None, None], :, rows, cols].permute(0, 3, 1, 2).contiguous()


def pollute(
    labels: torch.Tensor, p: Pollution, rng: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """SINVAD's polluted labels: exactly round(p.rate x n_source) of class p.source's
    labels set to p.target, chosen by one permutation drawn from ``rng``.

    Args:
        labels: (N,) int64, left as it is (a dataset caches its splits).
    Returns:
        (N,) the polluted labels, and the sorted indices relabelled. For one seed, a
        lower rate's draw is a prefix of a higher rate's, so the polluted sets of one
        seed are nested.
    """
    of_source = (labels == p.source).nonzero().flatten()
    if len(of_source) == 0:
        raise ConfigError(
            f"--pollute {p}: the training split has no image of class {p.source}; "
            "pollute a class it has"
        )
    count = round(p.rate * len(of_source))
    if count == 0:
        raise ConfigError(
            f"--pollute {p}: round({p.rate:g} x {len(of_source)} training images of class "
            f"{p.source}) relabels none; give a rate of at least 1/{len(of_source)} "
            f"= {1 / len(of_source):.2g}"
        )
    chosen = of_source[torch.randperm(len(of_source), generator=rng)[:count]].sort().values
    out = labels.clone()
    out[chosen] = p.target
    return out, chosen


def pollution_card(
    p: Pollution, labels: torch.Tensor, chosen: torch.Tensor, seed: int, names: list[str]
) -> dict[str, Any]:
    """What a polluted model's card states: the pair, the rate, how many of how many, the
    seed that drew them and a digest of the indices (to compare two runs' draws)."""
    return {
        "source": p.source,
        "target": p.target,
        "source_name": names[p.source],
        "target_name": names[p.target],
        "rate": p.rate,
        "relabelled": len(chosen),
        "of": int((labels == p.source).sum()),
        "seed": seed,
        "rule": "round(rate x images of source), one permutation from the training seed's "
        "generator, drawn before the first batch",
        "indices_sha256": hashlib.sha256(chosen.numpy().astype("<i8").tobytes()).hexdigest(),
    }


def train_classifier(
    s: TrainSettings,
    architecture: str | None = None,
    width: int | None = None,
    lr: float = 2e-3,
    augment_shift: int = 2,
    pollution: Pollution | None = None,
) -> dict[str, Any]:
    """Train a zoo classifier of ``architecture`` (default: by the image shape), ``width``
    for those that take one; returns its card with test accuracy and timing. With
    ``pollution``, on training labels polluted as it says (the card states it)."""
    dev = resolve_device(s.device)
    ds = get_dataset(s.dataset, s.data_dir)
    if pollution is not None:
        bad = [c for c in (pollution.source, pollution.target) if not 0 <= c < ds.num_classes]
        if bad:
            raise ConfigError(
                f"--pollute {pollution}: class {bad[0]} is out of range; {s.dataset} has "
                f"classes 0..{ds.num_classes - 1}"
            )
    architecture = architecture or default_architecture("classifier", ds.shape)
    name = s.name or f"{s.dataset}-{architecture}"
    folder, root = destination(name, s.out)
    rng, train = start(s.seed, ds)
    labels, polluted = train.labels, None
    if pollution is not None:
        # Drawn before the first batch, from the run's one generator: a clean run (no
        # draw) keeps its batch order, and every rate of one seed draws the same order.
        labels, chosen = pollute(train.labels, pollution, rng)
        polluted = pollution_card(pollution, train.labels, chosen, s.seed, ds.class_names)
    test = ds.load("test")
    params: dict[str, Any] = {
        "in_channels": ds.shape[0],
        "num_classes": ds.num_classes,
        "side": ds.shape[1],
    }
    if architecture in WIDTH_DEFAULT:
        params["width"] = width or WIDTH_DEFAULT[architecture]
    elif width is not None:
        raise ConfigError(
            f"--width {width}: architecture {architecture!r} has a fixed width; "
            f"--width applies to {', '.join(WIDTH_DEFAULT)}"
        )
    model = ARCHITECTURES.get(architecture)(**params).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    per_epoch = steps_per_epoch(len(train), s.batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=s.epochs * per_epoch)
    test_x, test_y = test.images.to(dev), test.labels.to(dev)
    run = TrainRun(f"train {architecture} on {s.dataset}", s.epochs, per_epoch, dev)
    with run:
        for _ in run.epochs():
            model.train()
            total = seen = 0.0
            for idx in batches(len(train), s.batch_size, rng):
                x = shift(train.images[idx], augment_shift, rng).to(dev)
                loss = F.cross_entropy(model(x), labels[idx].to(dev))
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                total, seen = total + float(loss.detach()) * len(idx), seen + len(idx)
                run.step(loss=total / seen)
            model.eval()
            run.note(test_acc=accuracy(model, test_x, test_y))
    model.eval().cpu()
    # Wrong labels on purpose: the dataset's campaigns never pick it up unasked.
    asked = False if pollution is not None and s.default is None else s.default
    default = auto_default(asked, "classifier", s.dataset, name, root)
    card: dict[str, Any] = {
        "name": name,
        "kind": "classifier",
        "architecture": architecture,
        "dataset": s.dataset,
        "default": default,
        "params": params,
        **data_fields(ds),
        "parameters": sum(p.numel() for p in model.parameters()),
        "training": record(
            s, ds, train, run, lr=lr, optimizer="AdamW + OneCycle", augment_shift_px=augment_shift
        ),
        **stamp(),
    }
    if polluted is not None:
        card["pollution"] = polluted
    model_dir = zoo.save_model(model, card, folder, fp16=s.fp16)
    # Quality of what was stored (fp16 weights), not of the in-memory model.
    clf = zoo.load_classifier(name, s.dataset, str(dev), root=root, data_dir=s.data_dir)
    card = zoo.load_card(name, root)
    card["metrics"] = {
        "test_accuracy": accuracy(clf.logits, test_x, test_y),
        "test_images": len(test),
    }
    probe = test_x[:25]
    card["inference"] = {
        f"ms_per_image_b{b}": round(ms_per_image(lambda n: clf.logits(probe[:n]), b), 4)
        for b in (1, 25)
    }
    (model_dir / zoo.CARD).write_text(json.dumps(card, indent=2) + "\n")
    return card
