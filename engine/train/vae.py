"""`latentfuzz train vae`: train a VAE (the MLP ``vae`` or the convolutional ``convvae``),
measure it, and write weights and card."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from engine.datasets import get_dataset
from engine.generators import GENERATORS
from engine.models import zoo
from engine.models.measure import finish_generator_card
from engine.train.common import (
    auto_default,
    batches,
    default_architecture,
    destination,
    family_params,
    generator_card,
    record,
    start,
    steps_per_epoch,
)
from engine.train.loop import TrainRun, resolve_device

#: Each family's size options and their defaults.
FAMILIES = {"vae": {"hidden": 1600, "latent": 400}, "convvae": {"width": 32, "latent": 128}}


def train_vae(
    dataset: str = "mnist",
    epochs: int = 150,
    batch_size: int = 128,
    lr: float = 1e-3,
    hidden: int | None = None,
    latent: int | None = None,
    seed: int = 0,
    classifier: str | None = None,
    name: str | None = None,
    out: Path | None = None,
    default: bool | None = None,
    data_dir: str | None = None,
    fp16: bool = True,
    family: str | None = None,
    width: int | None = None,
    device: str = "cpu",
) -> dict[str, Any]:
    dev = resolve_device(device)
    ds = get_dataset(dataset, data_dir)
    family = family or default_architecture("vae", ds.shape)
    params = family_params("vae", family, FAMILIES, hidden=hidden, latent=latent, width=width)
    name = name or f"{dataset}-vae"
    folder, root = destination(name, out)
    rng, train = start(seed, ds)
    vae = GENERATORS.get(family)(tuple(ds.shape), ds.num_classes, **params).to(dev)
    opt = torch.optim.Adam(vae.parameters(), lr=lr)
    per_epoch = steps_per_epoch(len(train), batch_size)
    run = TrainRun(f"train {family} on {dataset}", epochs, per_epoch, dev)
    with run:
        for _ in run.epochs():
            vae.train()
            total = seen = 0.0
            for idx in batches(len(train), batch_size, rng):
                x = train.images[idx].to(dev)
                recon, mu, logvar = vae(x)
                bce = F.binary_cross_entropy_with_logits(recon, x.flatten(1), reduction="sum")
                kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
                loss = (bce + kl) / len(idx)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total, seen = total + float(loss.detach()) * len(idx), seen + len(idx)
                run.step(loss=total / seen)
    training = record(
        ds, train, run.seconds, seed=seed, epochs=epochs, batch_size=batch_size, lr=lr,
        loss="BCE + KL", **run.record(),
    )  # fmt: skip
    default = auto_default(default, "generator", dataset, name, root)
    card = generator_card(name, family, ds, default, vae, params, training)
    zoo.save_model(vae.eval().cpu(), card, folder, fp16=fp16)
    card = finish_generator_card(name, ds, classifier, root, str(dev))
    if card["metrics"].get("viability") is not None:
        # The VAE's viability is its reconstruction accuracy; keep the name users know too.
        card["metrics"]["reconstruction_accuracy"] = card["metrics"]["viability"]
        (zoo.model_folder(name, root) / zoo.CARD).write_text(json.dumps(card, indent=2) + "\n")
    return card
