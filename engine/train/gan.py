"""`latentfuzz train gan`: train a conditional GAN (``gan`` for 28x28 MNIST, ``dcgan``
whose depth follows the image size) and write weights (discriminator kept) and card."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from engine.datasets import get_dataset
from engine.generators import GENERATORS
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

FAMILIES = {"gan": {"latent": 100, "width": 64}, "dcgan": {"latent": 100, "width": 64}}


def train_gan(
    s: TrainSettings,
    family: str | None = None,
    latent: int | None = None,
    width: int | None = None,
    lr: float = 2e-4,
) -> dict[str, Any]:
    """Train a conditional GAN of ``family`` (default: by the image shape) with the given
    sizes (default: the family's, FAMILIES); returns its measured card."""
    dev = resolve_device(s.device)
    ds = get_dataset(s.dataset, s.data_dir)
    family = family or default_architecture("gan", ds.shape)
    params = family_params("gan", family, FAMILIES, latent=latent, width=width)
    name = s.name or f"{s.dataset}-gan"
    folder, root = destination(name, s.out)
    rng, train = start(s.seed, ds)
    gan = GENERATORS.get(family)(ds.shape, ds.num_classes, **params).to(dev)
    g_opt = torch.optim.Adam(gan.net.parameters(), lr=lr, betas=(0.5, 0.999))
    d_opt = torch.optim.Adam(gan.discriminator.parameters(), lr=lr, betas=(0.5, 0.999))
    per_epoch = steps_per_epoch(len(train), s.batch_size)
    run = TrainRun(f"train {family} on {s.dataset}", s.epochs, per_epoch, dev)
    with run:
        for _ in run.epochs():
            gan.train()
            d_sum = g_sum = seen = 0.0
            for idx in batches(len(train), s.batch_size, rng):
                real, y = (train.images[idx] * 2 - 1).to(dev), train.labels[idx].to(dev)
                n = len(idx)
                z = torch.randn((n, params["latent"]), generator=rng).to(dev)
                fake = gan.net(z, y)
                # One-sided label smoothing keeps the discriminator from saturating.
                d_loss = F.binary_cross_entropy_with_logits(
                    gan.discriminator(real, y), torch.full((n,), 0.9, device=dev)
                ) + F.binary_cross_entropy_with_logits(
                    gan.discriminator(fake.detach(), y), torch.zeros(n, device=dev)
                )
                d_opt.zero_grad()
                d_loss.backward()
                d_opt.step()
                g_loss = F.binary_cross_entropy_with_logits(
                    gan.discriminator(fake, y), torch.ones(n, device=dev)
                )
                g_opt.zero_grad()
                g_loss.backward()
                g_opt.step()
                d_sum += float(d_loss.detach()) * n
                g_sum += float(g_loss.detach()) * n
                seen += n
                run.step(d_loss=d_sum / seen, g_loss=g_sum / seen)
    training = record(
        s, ds, train, run, lr=lr, loss="non-saturating BCE, one-sided label smoothing 0.9"
    )
    return save_generator(
        s,
        name,
        family,
        ds,
        gan,
        params,
        training,
        folder,
        root,
        parameters=gan.parameters_of_generator(),
        parameters_with_discriminator=sum(p.numel() for p in gan.parameters()),
    )
