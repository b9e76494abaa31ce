"""Generator plug-in base class.

A generator maps latents (B, *latent_shape), plus labels (B,) when conditional, to images
(B, C, H, W) in [0, 1]. ``decode`` is the checked entry point; subclasses write ``_decode``.
Seeds are drawn generically: encoder-based generators encode dataset images, conditional
generators sample a Gaussian latent with a class label.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from engine.core import files
from engine.core.errors import ModelError
from engine.core.registry import Registry
from engine.core.settings import Settings
from engine.core.tensors import check_tensor


@dataclass(frozen=True)
class Seeds:
    """Starting points of a campaign: latents (S, *latent_shape), intended labels (S,),
    and the dataset index each came from (-1 when sampled)."""

    latents: torch.Tensor
    labels: torch.Tensor
    source_index: torch.Tensor


class GeneratorOptions(Settings):
    """Run-time options of a generator (a campaign's ``generator_params``); none by default."""


class Generator(nn.Module, ABC):
    """Base of all generators. Subclasses set the class attributes and write ``_decode``."""

    family: ClassVar[str]
    conditional: ClassVar[bool] = False
    Options: ClassVar[type[GeneratorOptions]] = GeneratorOptions

    def __init__(self, image_shape: tuple[int, int, int], num_classes: int) -> None:
        super().__init__()
        self.image_shape = tuple(image_shape)
        self.num_classes = int(num_classes)
        # Filled from the model card: GIFTbench's scalar bounds over 1,000 latents.
        self.latent_bounds: tuple[float, float] = (-float("inf"), float("inf"))

    @classmethod
    def from_card(cls, card: dict[str, Any], folder: Path) -> Generator:
        """The generator a model card describes, its files in ``folder``: built from the
        card's params, then ``load_weights``. A family whose model is not a module built
        from params (a diffusers pipeline folder) overrides this."""
        gen = cls(**card["params"])
        gen.load_weights(folder)
        return gen

    def load_weights(self, folder: Path) -> None:
        """Load the stored weights from a model folder: the zoo's safetensors file. A family
        that keeps its model in another format (a TorchScript decoder) overrides this."""
        files.load_weights(self, folder)

    def configure(self, **options) -> None:
        """Apply run-time options; validated by ``Options`` (unknown keys are errors)."""
        self.Options(**options)

    def options(self) -> dict:
        """The run-time options in force, every default filled in (recorded per campaign)."""
        return {}

    @contextmanager
    def seeding(self) -> Iterator[None]:
        """Seed images are decoded inside this block. A generator that makes seeds with
        other settings than the search (the DM's seed guidance) switches them here."""
        yield

    @property
    @abstractmethod
    def latent_shape(self) -> tuple[int, ...]:
        """Shape of one latent, without the batch dimension."""

    @property
    def has_encoder(self) -> bool:
        return type(self)._encode is not Generator._encode

    @property
    def device(self) -> torch.device:
        # Cached: decode reads it for every batch, and walking the parameters cost about
        # 1% of a campaign's time. `_apply` (.to, .cuda, .half) forgets it.
        dev = self.__dict__.get("_device")
        if dev is None:
            p = next(self.parameters(), None)
            dev = self.__dict__["_device"] = p.device if p is not None else torch.device("cpu")
        return dev

    def _apply(self, fn, *args, **kwargs):
        self.__dict__.pop("_device", None)
        return super()._apply(fn, *args, **kwargs)

    @torch.no_grad()
    def decode(self, z: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        """Latents (B, *latent_shape) [+ labels (B,)] -> images (B, C, H, W) in [0, 1]."""
        check_tensor(z, f"{self.family} latents", self.latent_shape, self.device)
        if self.conditional and (labels is None or labels.shape != (z.shape[0],)):
            got = None if labels is None else tuple(labels.shape)
            raise ModelError(
                f"{self.family} is conditional: labels of shape ({z.shape[0]},) needed, got {got}"
            )
        x = self._decode(z, labels)
        check_tensor(x, f"{self.family} output", self.image_shape, self.device, finite=False)
        # min/max propagate NaN, so this one pass checks finiteness and range together.
        lo, hi = (float(v) for v in torch.aminmax(x))
        if not (lo == lo and hi == hi):
            raise ModelError(f"{self.family} output: contains NaN values")
        if lo < -1e-4 or hi > 1 + 1e-4:
            raise ModelError(
                f"{self.family} output spans [{lo:.3f}, {hi:.3f}], expected images in [0, 1]"
            )
        return x.clamp_(0.0, 1.0)

    @abstractmethod
    def _decode(self, z: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor: ...

    @torch.no_grad()
    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Images (B, C, H, W) -> latents (B, *latent_shape); only for encoder generators."""
        if not self.has_encoder:
            raise ModelError(f"generator {self.family!r} has no encoder")
        check_tensor(x, f"{self.family} encoder input", self.image_shape, self.device)
        z = self._encode(x)
        check_tensor(z, f"{self.family} encoder output", self.latent_shape, self.device)
        return z

    def _encode(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def sample_prior(self, n: int, rng: torch.Generator) -> torch.Tensor:
        """n latents from the prior, N(0, I)."""
        return torch.randn((n, *self.latent_shape), generator=rng).to(self.device)

    def draw_seeds(
        self,
        n: int,
        images: torch.Tensor,
        labels: torch.Tensor,
        rng: torch.Generator,
        target_class: int | None = None,
    ) -> Seeds:
        """Draw n seeds. images/labels: a dataset split, used by encoder generators."""
        if self.has_encoder and not self.conditional:
            pool = torch.arange(len(labels))
            if target_class is not None:
                pool = pool[labels == target_class]
            if len(pool) < n:
                raise ModelError(f"only {len(pool)} dataset images to seed from, {n} seeds asked")
            idx = pool[torch.randperm(len(pool), generator=rng)[:n]]
            z = self.encode(images[idx].to(self.device))
            return Seeds(z, labels[idx].clone(), idx)
        if target_class is not None:
            y = torch.full((n,), int(target_class), dtype=torch.long)
        else:
            y = torch.randint(0, self.num_classes, (n,), generator=rng)
        z = self.sample_prior(n, rng)
        return Seeds(z, y, torch.full((n,), -1, dtype=torch.long))


class GuidedGenerator(Generator):
    """A generator with classifier-free guidance: ``guidance`` during the search and
    ``seed_guidance`` for the seed images, as GIFTbench guides seeds harder (3.5, then 1.4
    during the search). Subclasses set both in ``configure``."""

    guidance: float
    seed_guidance: float

    @contextmanager
    def seeding(self) -> Iterator[None]:
        search, self.guidance = self.guidance, self.seed_guidance
        try:
            yield
        finally:
            self.guidance = search


GENERATORS: Registry[type[Generator]] = Registry("generator family")
