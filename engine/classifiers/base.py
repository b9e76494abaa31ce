"""Classifier plug-in base class: images (B, C, H, W) in [0, 1] -> logits (B, K)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from engine.classifiers import inference
from engine.core.errors import ModelError
from engine.core.registry import Registry
from engine.core.tensors import check_tensor


class Classifier(ABC):
    """Checked wrapper around a model. ``logits`` validates; subclasses write ``_logits``."""

    def __init__(self, input_shape: tuple[int, int, int], num_classes: int, name: str) -> None:
        self.input_shape = tuple(input_shape)
        self.num_classes = int(num_classes)
        self.name = name
        self.device = torch.device("cpu")

    def to(self, device: torch.device | str) -> Classifier:
        self.device = torch.device(device)
        self._to(self.device)
        return self

    @abstractmethod
    def _to(self, device: torch.device) -> None: ...

    def prepare(self) -> None:
        """Build what inference needs ahead of the first batch (a campaign calls it before
        its search, so its first generation does not pay for it); nothing by default."""
        return None

    @torch.no_grad()
    def logits(self, x: torch.Tensor, finite_input: bool = False) -> torch.Tensor:
        """Images (B, C, H, W) in [0, 1] -> finite logits (B, K). `finite_input`: x comes
        from Generator.decode, which has checked it already (one pass over every image
        less per batch)."""
        check_tensor(
            x,
            f"classifier {self.name} input",
            self.input_shape,
            self.device,
            finite=not finite_input,
        )
        out = self._logits(x)
        if not isinstance(out, torch.Tensor) or out.shape != (x.shape[0], self.num_classes):
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise ModelError(
                f"classifier {self.name}: output {got}, expected ({x.shape[0]}, {self.num_classes})"
            )
        if not torch.isfinite(out.sum()):
            raise ModelError(f"classifier {self.name}: output has NaN or infinite logits")
        return out.float()

    @abstractmethod
    def _logits(self, x: torch.Tensor) -> torch.Tensor: ...


class ModuleClassifier(Classifier):
    """A classifier backed by an ``nn.Module`` (zoo architectures and TorchScript files)."""

    def __init__(
        self, module: nn.Module, input_shape, num_classes: int, name: str, optimise: bool = False
    ) -> None:
        super().__init__(input_shape, num_classes, name)
        self.module = module.eval()
        #: Run as an optimised graph where the device allows (engine/classifiers/inference.py):
        #: zoo architectures only. None: not built yet for this device; False: eager.
        self.optimise = optimise
        self._graph: Callable | None | bool = None

    def _to(self, device: torch.device) -> None:
        self.module.to(device)
        self._graph = None

    @property
    def runs_as_graph(self) -> bool:
        return bool(self._graph)

    def prepare(self) -> None:
        if self.optimise and not inference.eager_forced() and self._graph is None:
            self._graph = inference.available(self.device) and (
                inference.build_graph(self.module, self.input_shape) or False
            )

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        if self.optimise and not inference.eager_forced():
            self.prepare()
            if self._graph:
                return self._graph(x)
        return self.module(x)


#: Zoo architectures: name -> nn.Module class taking (in_channels, num_classes, side).
ARCHITECTURES: Registry[type[nn.Module]] = Registry("classifier architecture")


#: Classifier file formats: name -> loader(path, input_shape, num_classes, dataset), which
#: validates the file against the dataset and returns a Classifier (or raises ModelError).
FORMATS: Registry[Callable[..., Classifier]] = Registry("classifier format")
#: File suffix -> format name, for paths given on the command line or uploaded.
SUFFIXES: dict[str, str] = {}


def register_format(name: str, suffixes: tuple[str, ...]) -> Callable:
    """Register a loader under ``name`` for files ending in ``suffixes``."""

    def deco(loader: Callable[..., Classifier]) -> Callable[..., Classifier]:
        FORMATS.register(name)(loader)
        SUFFIXES.update(dict.fromkeys(suffixes, name))
        return loader

    return deco


def refuse_empty(path: Path, kind: str) -> None:
    """A model file of 0 bytes (a failed download or copy) named as such: the loaders'
    own message for it was the archive reader's ("not a ZIP archive ... internal miniz
    error")."""
    if path.stat().st_size == 0:
        raise ModelError(
            f"{path} is empty (0 bytes); expected a {kind} file: copy or export it again"
        )


def check_probe(
    file: str,
    out3: torch.Tensor,
    out1: torch.Tensor,
    num_classes: int,
    dataset: str,
    batch_fix: str,
) -> None:
    """Refuse a loaded classifier file by its logits on one probe batch of 3 images and on
    the first of them alone: (3, K) and (1, K) for the dataset's K classes, finite, and the
    same for the same image. Each loader runs the probe its own way (its errors name its
    export call); the checks of what comes back are these, once.

    Args:
        file: the file's name, for the messages.
        out3: what the model returned for the batch of 3, meant as logits (3, K).
        out1: what it returned for the first image alone, meant as (1, K).
        num_classes: the dataset's K.
        dataset: the dataset's name, for the messages.
        batch_fix: the fix named when a batch's output has the wrong shape.
    """
    for out, b in ((out3, 3), (out1, 1)):
        if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[0] != b:
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise ModelError(
                f"{file} returned {got} for a batch of {b}, expected ({b}, {num_classes}) "
                f"logits; {batch_fix}"
            )
    if out3.shape[1] != num_classes:
        raise ModelError(
            f"{file} returns {out3.shape[1]} classes, dataset {dataset} has {num_classes}; "
            f"use a classifier trained on {dataset}"
        )
    if not (torch.isfinite(out3).all() and torch.isfinite(out1).all()):
        raise ModelError(
            f"{file} returned NaN or infinite logits on valid {dataset} images in [0, 1]; "
            f"check the model before exporting (a division, a log of zero)"
        )
    if not torch.allclose(out3[:1].float(), out1.float(), atol=1e-3, rtol=1e-3):
        raise ModelError(
            f"{file} gives different logits for the same image in batches of 1 and 3; "
            f"put the model in eval mode before exporting"
        )


def format_of(path: str | Path) -> str | None:
    """The format a file name says it holds, or None for an unknown suffix."""
    return SUFFIXES.get(Path(path).suffix.lower())


def load_file(path: str | Path, input_shape, num_classes: int, dataset: str = "?") -> Classifier:
    """Validate and load a classifier file by its suffix (TorchScript when unknown, as
    `torch.jit.save` writes whatever name it is given)."""
    return FORMATS.get(format_of(path) or "torchscript")(path, input_shape, num_classes, dataset)
