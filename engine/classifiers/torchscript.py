"""User classifiers as one TorchScript file, validated on load.

The checks run once, here, so that a bad file fails before a campaign writes anything:
it loads, accepts the dataset's image shape, returns (B, K) logits for the dataset's K
classes, returns finite values, and handles batches of different sizes consistently.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import torch

from engine.classifiers.base import ModuleClassifier, refuse_empty, register_format
from engine.core.errors import ModelError, cause, refuse_not_file

FIX = "export with torch.jit.script(model) or torch.jit.trace(model, example) then torch.jit.save"


@register_format("torchscript", (".pt", ".pth", ".ts", ".torchscript"))
def load_torchscript(
    path: str | Path, input_shape: tuple[int, int, int], num_classes: int, dataset: str = "?"
) -> ModuleClassifier:
    """Load and validate a TorchScript classifier for images of input_shape in [0, 1]."""
    path = Path(path)
    refuse_not_file(path, "classifier file", "a TorchScript (.pt) file")
    refuse_empty(path, "TorchScript")
    try:
        with warnings.catch_warnings():
            # TorchScript is deprecated upstream but is still the format users export.
            warnings.simplefilter("ignore", DeprecationWarning)
            module = torch.jit.load(str(path), map_location="cpu")
    except Exception as e:  # noqa: BLE001 - torch raises many types for a corrupt archive
        raise ModelError(
            f"could not load {path} as TorchScript ({cause(e)}); "
            f"expected a file written by torch.jit.save: {FIX}"
        ) from e
    module.eval()
    probe = torch.rand((3, *input_shape), generator=torch.Generator().manual_seed(0))
    shape_txt = f"(B, {', '.join(map(str, input_shape))})"
    try:
        with torch.no_grad():
            out3 = module(probe)
            out1 = module(probe[:1])
    except Exception as e:  # noqa: BLE001 - any failure here means the input shape is wrong
        raise ModelError(
            f"{path.name} failed on {dataset} images of shape {shape_txt} in [0, 1] "
            f"({cause(e)}); the classifier must take "
            f"that shape"
        ) from e
    for out, b in ((out3, 3), (out1, 1)):
        if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[0] != b:
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise ModelError(
                f"{path.name} returned {got} for a batch of {b}, expected ({b}, {num_classes}) "
                f"logits; batch support is required"
            )
    if out3.shape[1] != num_classes:
        raise ModelError(
            f"{path.name} returns {out3.shape[1]} classes, dataset {dataset} has {num_classes}; "
            f"use a classifier trained on {dataset}"
        )
    if not (torch.isfinite(out3).all() and torch.isfinite(out1).all()):
        raise ModelError(f"{path.name} returned NaN or infinite logits on valid images")
    if not torch.allclose(out3[:1], out1, atol=1e-3, rtol=1e-3):
        raise ModelError(
            f"{path.name} gives different logits for the same image in batches of 1 and 3; "
            f"put the model in eval mode before exporting"
        )
    return ModuleClassifier(module, input_shape, num_classes, name=path.name)
