"""`latentfuzz train vae`: train the MLP VAE, measure it, and write weights and card."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from engine import zoo
from engine.generators.vae import VAE
from engine.train.common import batches, generator_card, progress_bar, record, start
from engine.train.measure import finish_generator_card


def train_vae(
    dataset: str = "mnist",
    epochs: int = 150,
    batch_size: int = 128,
    lr: float = 1e-3,
    hidden: int = 1600,
    latent: int = 400,
    seed: int = 0,
    classifier: str | None = None,
    name: str | None = None,
    out: Path | None = None,
    default: bool = False,
    data_dir: str | None = None,
    fp16: bool = True,
) -> dict[str, Any]:
    rng, ds, train = start(seed, dataset, data_dir)
    vae = VAE(tuple(ds.shape), ds.num_classes, hidden, latent)
    opt = torch.optim.Adam(vae.parameters(), lr=lr)
    t0 = time.perf_counter()
    with progress_bar(f"train vae on {dataset}", epochs) as advance:
        for _ in range(epochs):
            vae.train()
            total = 0.0
            for idx in batches(len(train), batch_size, rng):
                x = train.images[idx]
                recon, mu, logvar = vae(x)
                bce = F.binary_cross_entropy_with_logits(recon, x.flatten(1), reduction="sum")
                kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
                loss = (bce + kl) / len(idx)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(idx)
            advance(loss=total / len(train))
    seconds = time.perf_counter() - t0
    name = name or f"{dataset}-vae"
    training = record(
        ds, train, seconds, seed=seed, epochs=epochs, batch_size=batch_size, lr=lr, loss="BCE + KL"
    )
    card = generator_card(
        name, "vae", ds, default, vae, {"hidden": hidden, "latent": latent}, training
    )
    zoo.save_model(vae, card, out, fp16=fp16)
    card = finish_generator_card(name, dataset, classifier, out)
    # The VAE's viability is its reconstruction accuracy; keep the name users know too.
    card["metrics"]["reconstruction_accuracy"] = card["metrics"]["viability"]
    (zoo.models_dir() if out is None else out).joinpath(name, zoo.CARD).write_text(
        json.dumps(card, indent=2) + "\n"
    )
    return card
