"""User classifiers as one TorchScript file, validated on load.

The checks run once, here, so that a bad file fails before a campaign writes anything:
it loads, accepts the dataset's image shape, returns (B, K) logits for the dataset's K
classes, returns finite values, and handles batches of different sizes consistently.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import torch

from engine.classifiers.base import (
    ModuleClassifier,
    check_probe,
    refuse_empty,
    register_format,
)
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
    check_probe(path.name, out3, out1, num_classes, dataset, "batch support is required")
    return ModuleClassifier(module, input_shape, num_classes, name=path.name)
