"""`latentfuzz train vae`: train a VAE (the MLP ``vae`` or the convolutional ``convvae``),
measure it, and write weights and card."""

from __future__ import annotations

import json
from typing import Any

import torch
import torch.nn.functional as F

from engine.datasets import get_dataset
from engine.generators import GENERATORS
from engine.models import zoo
from engine.train.common import (
    batches,
    default_architecture,
    destination,
    family_params,
    record,
    save_generator,
    start,
    steps_per_epoch,
)
from engine.train.loop import TrainRun, resolve_device
from engine.train.settings import TrainSettings

#: Each family's size options and their defaults.
FAMILIES = {"vae": {"hidden": 1600, "latent": 400}, "convvae": {"width": 32, "latent": 128}}


def train_vae(
    s: TrainSettings,
    family: str | None = None,
    hidden: int | None = None,
    latent: int | None = None,
    width: int | None = None,
    lr: float = 1e-3,
) -> dict[str, Any]:
    """Train a VAE of ``family`` (default: by the image shape) with the given sizes (default:
    the family's, FAMILIES); returns its measured card."""
    dev = resolve_device(s.device)
    ds = get_dataset(s.dataset, s.data_dir)
    family = family or default_architecture("vae", ds.shape)
    params = family_params("vae", family, FAMILIES, hidden=hidden, latent=latent, width=width)
    name = s.name or f"{s.dataset}-vae"
    folder, root = destination(name, s.out)
    rng, train = start(s.seed, ds)
    vae = GENERATORS.get(family)(tuple(ds.shape), ds.num_classes, **params).to(dev)
    opt = torch.optim.Adam(vae.parameters(), lr=lr)
    per_epoch = steps_per_epoch(len(train), s.batch_size)
    run = TrainRun(f"train {family} on {s.dataset}", s.epochs, per_epoch, dev)
    with run:
        for _ in run.epochs():
            vae.train()
            total = seen = 0.0
            for idx in batches(len(train), s.batch_size, rng):
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
    training = record(s, ds, train, run, lr=lr, loss="BCE + KL")
    card = save_generator(s, name, family, ds, vae, params, training, folder, root)
    if card["metrics"].get("viability") is not None:
        # The VAE's viability is its reconstruction accuracy; keep the name users know too.
        card["metrics"]["reconstruction_accuracy"] = card["metrics"]["viability"]
        (zoo.model_folder(name, root) / zoo.CARD).write_text(json.dumps(card, indent=2) + "\n")
    return card
