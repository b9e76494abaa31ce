"""Checks on tensors crossing a plug-in boundary (a generator's latents and images, a
classifier's input), shared by the generator and classifier base classes."""

from __future__ import annotations

import torch

from engine.core.errors import ModelError


def check_tensor(
    x: torch.Tensor, what: str, shape: tuple[int, ...], device: torch.device, finite: bool = True
) -> None:
    """Raise ModelError unless x is a tensor of the given trailing shape on device.

    Args:
        x: the tensor, (B, *shape).
        what: how the message names it ("vae latents").
        shape: the expected shape without the batch dimension.
        device: where it must be.
        finite: also refuse NaN and infinite values.
    """
    if not isinstance(x, torch.Tensor):
        raise ModelError(f"{what}: expected a torch.Tensor, got {type(x).__name__}")
    if tuple(x.shape[1:]) != tuple(shape):
        raise ModelError(
            f"{what}: got shape {tuple(x.shape)}, expected (B, {', '.join(map(str, shape))})"
        )
    if x.device != device:
        raise ModelError(f"{what}: tensor on {x.device}, model on {device}; move it first")
    # One reduction instead of an elementwise mask: NaN and inf propagate through the sum.
    if finite and not torch.isfinite(x.sum()):
        raise ModelError(f"{what}: contains NaN or infinite values")
