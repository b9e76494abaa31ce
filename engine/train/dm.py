"""`latentfuzz train dm`: train the class-conditional diffusion model (diffusers UNet2DModel
at a working resolution, DDIM sampling; engine/generators/dm.py); weights and card.

Defaults per shape: 1x28x28 keeps the bundled MNIST model's UNet (channels 16, 32) at 14x14;
any other shape gets channels 32, 64, 64 at the image side up to 32 (64x64 images work
at 32x32 and are upsampled bicubically, as the MNIST model's 14x14 are)."""

from __future__ import annotations

import copy
from typing import Any

import torch
import torch.nn.functional as F

from engine.core.errors import ConfigError
from engine.datasets import get_dataset
from engine.generators.dm import DiffusionModel
from engine.train.common import (
    LEGACY_SHAPE,
    batches,
    destination,
    record,
    save_generator,
    start,
    steps_per_epoch,
)
from engine.train.loop import TrainRun, resolve_device
from engine.train.settings import TrainSettings

#: The UNet's group norm splits channels in 8 groups.
NORM_GROUPS = 8


def default_unet(shape: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """(channels, working resolution) for images of `shape`."""
    if tuple(shape) == LEGACY_SHAPE:
        return (16, 32), 14
    return (32, 64, 64), min(shape[1], 32)


def check_unet(channels: tuple[int, ...], resolution: int, shape: tuple[int, ...]) -> None:
    """One-line errors for a UNet that diffusers would refuse, or fail inside, later."""
    if any(c % NORM_GROUPS or c <= 0 for c in channels):
        raise ConfigError(
            f"--channels {','.join(map(str, channels))}: each must be a positive multiple of "
            f"{NORM_GROUPS} (the UNet's group norm), e.g. 32,64,64"
        )
    if shape[1] != shape[2]:
        raise ConfigError(f"dm: images of {shape[1]}x{shape[2]} are not square; resize them")
    step = 2 ** (len(channels) - 1)
    if not 4 <= resolution <= shape[1] or resolution % step:
        raise ConfigError(
            f"--resolution {resolution}: expected a side from 4 to the image side {shape[1]} "
            f"divisible by {step} (the UNet halves it {len(channels) - 1} times for "
            f"{len(channels)} channel levels)"
        )


def train_dm(
    s: TrainSettings,
    channels: tuple[int, ...] | None = None,
    sample_side: int | None = None,
    steps: int = 4,
    guidance: float = 2.0,
    lr: float = 2e-3,
    p_uncond: float = 0.1,
    ema_decay: float = 0.995,
) -> dict[str, Any]:
    """Train the class-conditional DM: a UNet of ``channels`` at side ``sample_side``
    (default: by the image shape, ``default_unet``), sampled with ``steps`` DDIM steps at
    ``guidance``; returns its measured card."""
    dev = resolve_device(s.device)
    ds = get_dataset(s.dataset, s.data_dir)
    ch_default, side_default = default_unet(ds.shape)
    channels = tuple(channels or ch_default)
    side = sample_side or side_default
    check_unet(channels, side, ds.shape)
    name = s.name or f"{s.dataset}-dm"
    folder, root = destination(name, s.out)
    # Deferred (start-up time: loads diffusers).
    from diffusers import DDPMScheduler  # after the checks: a wrong option fails at once

    rng, train = start(s.seed, ds)
    dm = DiffusionModel(ds.shape, ds.num_classes, channels, 1, 1000, steps, guidance, side)
    images = dm.to_model_space(train.images)
    dm.to(dev)
    noise_sched = DDPMScheduler(**dm.scheduler_config)
    ema = copy.deepcopy(dm.unet).eval().requires_grad_(False)
    opt = torch.optim.AdamW(dm.unet.parameters(), lr=lr, weight_decay=1e-4)
    per_epoch = steps_per_epoch(len(train), s.batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=s.epochs * per_epoch)
    run = TrainRun(f"train dm on {s.dataset}", s.epochs, per_epoch, dev)
    with run:
        for _ in run.epochs():
            dm.unet.train()
            loss_sum = seen = 0.0
            for idx in batches(len(train), s.batch_size, rng):
                x0, y = images[idx], train.labels[idx].clone()
                # Dropping the label teaches the unconditional model guidance needs.
                y[torch.rand(len(idx), generator=rng) < p_uncond] = ds.num_classes
                noise = torch.randn(x0.shape, generator=rng)
                t = torch.randint(
                    0, noise_sched.config.num_train_timesteps, (len(idx),), generator=rng
                )
                x0, y, noise, t = x0.to(dev), y.to(dev), noise.to(dev), t.to(dev)
                pred = dm.unet(noise_sched.add_noise(x0, noise, t), t, class_labels=y).sample
                loss = F.mse_loss(pred, noise)
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                with torch.no_grad():
                    for pe, p in zip(ema.parameters(), dm.unet.parameters(), strict=True):
                        pe.lerp_(p, 1 - ema_decay)
                loss_sum, seen = loss_sum + float(loss.detach()) * len(idx), seen + len(idx)
                run.step(loss=loss_sum / seen)
    dm.unet.load_state_dict(ema.state_dict())
    loss = f"epsilon MSE (DDPM), label dropout {p_uncond}, EMA {ema_decay}"
    training = record(s, ds, train, run, lr=lr, loss=loss)
    params = {
        "channels": list(channels),
        "layers_per_block": 1,
        "train_timesteps": 1000,
        "steps": steps,
        "guidance": guidance,
        "sample_side": dm.side,
    }
    sampler = f"DDIM, eta 0, {steps} steps, classifier-free guidance {guidance}"
    return save_generator(s, name, "dm", ds, dm, params, training, folder, root, sampler=sampler)
