"""`latentfuzz train dm`: train the class-conditional diffusion model; weights and card."""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from diffusers import DDPMScheduler

from engine import zoo
from engine.generators.dm import DiffusionModel
from engine.train.common import batches, generator_card, progress_bar, record, start
from engine.train.measure import finish_generator_card


def train_dm(
    dataset: str = "mnist",
    epochs: int = 30,
    batch_size: int = 64,
    lr: float = 2e-3,
    channels: tuple[int, ...] = (16, 32),
    sample_side: int | None = 14,
    p_uncond: float = 0.1,
    ema_decay: float = 0.995,
    steps: int = 4,
    guidance: float = 2.0,
    seed: int = 0,
    classifier: str | None = None,
    name: str | None = None,
    out: Path | None = None,
    default: bool = False,
    data_dir: str | None = None,
) -> dict[str, Any]:
    rng, ds, train = start(seed, dataset, data_dir)
    dm = DiffusionModel(ds.shape, ds.num_classes, channels, 1, 1000, steps, guidance, sample_side)
    images = dm.to_model_space(train.images)
    noise_sched = DDPMScheduler(**dm.scheduler_config)
    ema = copy.deepcopy(dm.unet).eval().requires_grad_(False)
    opt = torch.optim.AdamW(dm.unet.parameters(), lr=lr, weight_decay=1e-4)
    total = epochs * -(-len(train) // batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=total)
    t0 = time.perf_counter()
    with progress_bar(f"train dm on {dataset}", epochs) as advance:
        for _ in range(epochs):
            dm.unet.train()
            loss_sum = 0.0
            for idx in batches(len(train), batch_size, rng):
                x0, y = images[idx], train.labels[idx].clone()
                # Dropping the label teaches the unconditional model guidance needs.
                y[torch.rand(len(idx), generator=rng) < p_uncond] = ds.num_classes
                noise = torch.randn(x0.shape, generator=rng)
                t = torch.randint(
                    0, noise_sched.config.num_train_timesteps, (len(idx),), generator=rng
                )
                pred = dm.unet(noise_sched.add_noise(x0, noise, t), t, class_labels=y).sample
                loss = F.mse_loss(pred, noise)
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                with torch.no_grad():
                    for pe, p in zip(ema.parameters(), dm.unet.parameters(), strict=True):
                        pe.lerp_(p, 1 - ema_decay)
                loss_sum += float(loss.detach()) * len(idx)
            advance(loss=loss_sum / len(train))
    seconds = time.perf_counter() - t0
    dm.unet.load_state_dict(ema.state_dict())
    name = name or f"{dataset}-dm"
    training = record(
        ds,
        train,
        seconds,
        seed=seed,
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        loss=f"epsilon MSE (DDPM), label dropout {p_uncond}, EMA {ema_decay}",
    )
    params = {
        "channels": list(channels),
        "layers_per_block": 1,
        "train_timesteps": 1000,
        "steps": steps,
        "guidance": guidance,
        "sample_side": dm.side,
    }
    card = generator_card(
        name,
        "dm",
        ds,
        default,
        dm,
        params,
        training,
        sampler=f"DDIM, eta 0, {steps} steps, classifier-free guidance {guidance}",
    )
    zoo.save_model(dm, card, out)
    return finish_generator_card(name, dataset, classifier, out)
