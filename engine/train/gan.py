"""`latentfuzz train gan`: train the conditional DCGAN and write weights and card."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from engine import zoo
from engine.generators.gan import ConditionalGAN
from engine.train.common import batches, generator_card, progress_bar, record, start
from engine.train.measure import finish_generator_card


def train_gan(
    dataset: str = "mnist",
    epochs: int = 80,
    batch_size: int = 64,
    lr: float = 2e-4,
    latent: int = 100,
    width: int = 64,
    seed: int = 0,
    classifier: str | None = None,
    name: str | None = None,
    out: Path | None = None,
    default: bool = False,
    data_dir: str | None = None,
) -> dict[str, Any]:
    rng, ds, train = start(seed, dataset, data_dir)
    gan = ConditionalGAN(ds.shape, ds.num_classes, latent, width)
    g_opt = torch.optim.Adam(gan.net.parameters(), lr=lr, betas=(0.5, 0.999))
    d_opt = torch.optim.Adam(gan.discriminator.parameters(), lr=lr, betas=(0.5, 0.999))
    t0 = time.perf_counter()
    with progress_bar(f"train gan on {dataset}", epochs) as advance:
        for _ in range(epochs):
            gan.train()
            d_sum = g_sum = 0.0
            for idx in batches(len(train), batch_size, rng):
                real, y = train.images[idx] * 2 - 1, train.labels[idx]
                n = len(idx)
                z = torch.randn((n, latent), generator=rng)
                fake = gan.net(z, y)
                # One-sided label smoothing keeps the discriminator from saturating.
                d_loss = F.binary_cross_entropy_with_logits(
                    gan.discriminator(real, y), torch.full((n,), 0.9)
                ) + F.binary_cross_entropy_with_logits(
                    gan.discriminator(fake.detach(), y), torch.zeros(n)
                )
                d_opt.zero_grad()
                d_loss.backward()
                d_opt.step()
                g_loss = F.binary_cross_entropy_with_logits(
                    gan.discriminator(fake, y), torch.ones(n)
                )
                g_opt.zero_grad()
                g_loss.backward()
                g_opt.step()
                d_sum += float(d_loss.detach()) * n
                g_sum += float(g_loss.detach()) * n
            advance(d_loss=d_sum / len(train), g_loss=g_sum / len(train))
    seconds = time.perf_counter() - t0
    name = name or f"{dataset}-gan"
    training = record(
        ds,
        train,
        seconds,
        seed=seed,
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        loss="non-saturating BCE, one-sided label smoothing 0.9",
    )
    card = generator_card(
        name,
        "gan",
        ds,
        default,
        gan,
        {"latent": latent, "width": width},
        training,
        parameters_with_discriminator=sum(p.numel() for p in gan.parameters()),
    )
    card["parameters"] = gan.parameters_of_generator()
    zoo.save_model(gan, card, out)
    return finish_generator_card(name, dataset, classifier, out)
