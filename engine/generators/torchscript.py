"""A user's TorchScript decoder as a generator: latents (B, *latent_shape), plus labels
(B,) when conditional, -> images (B, C, H, W).

The decoder's output range (the card's ``output_range``: [-1, 1] for a tanh decoder) is
mapped to [0, 1], the range classifiers take. It has no encoder, so seeds are Gaussian
latents with a class label, as for the zoo's GAN and diffusion model; an unconditional
decoder's seeds get a random label, so only the seeds the classifier happens to give that
label are viable.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import torch

from engine.core.errors import ModelError, cause, refuse_not_file
from engine.generators.base import GENERATORS, Generator

DECODER = "decoder.pt"
FIX = "export with torch.jit.script(decoder.eval()) or torch.jit.trace, then torch.jit.save"


def load_decoder(path: Path) -> torch.nn.Module:
    """torch.jit.load, refusing a missing or unreadable file in one line."""
    refuse_not_file(path, "decoder file", "a TorchScript (.pt) file")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return torch.jit.load(str(path), map_location="cpu").eval()
    except Exception as e:  # noqa: BLE001 - torch raises many types for a corrupt archive
        raise ModelError(
            f"could not load {path} as TorchScript ({cause(e)}); "
            f"expected a decoder written by torch.jit.save: {FIX}"
        ) from e


@GENERATORS.register("torchscript")
class TorchScriptGenerator(Generator):
    family = "torchscript"

    def __init__(
        self,
        image_shape: tuple[int, int, int],
        num_classes: int,
        latent_shape: tuple[int, ...] | list[int],
        conditional: bool = False,
        output_range: tuple[float, float] | list[float] = (0.0, 1.0),
        file: str = DECODER,
    ) -> None:
        super().__init__(tuple(image_shape), num_classes)
        self._latent_shape = tuple(int(d) for d in latent_shape)
        # Per model here, where the zoo's families fix it per class.
        self.conditional = bool(conditional)
        self.output_range = (float(output_range[0]), float(output_range[1]))
        if not self.output_range[1] > self.output_range[0]:
            raise ModelError(
                f"output range {list(self.output_range)} is empty; expected LOW,HIGH with "
                f"LOW < HIGH, e.g. -1,1 for a tanh decoder"
            )
        self.file = file
        self.decoder: torch.nn.Module | None = None

    @property
    def latent_shape(self) -> tuple[int, ...]:
        return self._latent_shape

    def load_weights(self, folder: Path) -> None:
        self.decoder = load_decoder(Path(folder) / self.file)

    def _decode(self, z: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        x = self.decoder(z, labels) if self.conditional else self.decoder(z)
        lo, hi = self.output_range
        return (x - lo) / (hi - lo)

    @torch.no_grad()
    def check(self) -> None:
        """Refuse, in one line each, a decoder that fails on our latents, makes the wrong
        shape, NaN, values outside its stated range, or batch-dependent images."""
        rng = torch.Generator().manual_seed(0)
        z = self.sample_prior(3, rng)
        y = torch.arange(3) % self.num_classes
        call = "(z, labels)" if self.conditional else "(z)"
        hint = "drop --conditional" if self.conditional else "add --conditional"
        try:
            x3 = self.decoder(z, y) if self.conditional else self.decoder(z)
            x1 = self.decoder(z[:1], y[:1]) if self.conditional else self.decoder(z[:1])
        except Exception as e:  # noqa: BLE001 - any failure here is the decoder refusing us
            raise ModelError(
                f"the decoder failed on {call} with latents of shape "
                f"(3, {', '.join(map(str, self.latent_shape))}) ({type(e).__name__}: "
                f"{str(e).splitlines()[0][:160]}); give its real --latent-shape, or {hint} "
                f"if it takes {'only latents' if self.conditional else 'labels too'}"
            ) from e
        want = (3, *self.image_shape)
        if not isinstance(x3, torch.Tensor) or tuple(x3.shape) != want:
            got = tuple(x3.shape) if isinstance(x3, torch.Tensor) else type(x3).__name__
            raise ModelError(
                f"the decoder made {got} for 3 latents, expected images {want} of the "
                f"dataset's shape; import it for the dataset it was trained on"
            )
        if not (torch.isfinite(x3).all() and torch.isfinite(x1).all()):
            raise ModelError("the decoder made NaN or infinite pixels from Gaussian latents")
        lo, hi = float(x3.min()), float(x3.max())
        a, b = self.output_range
        slack = 1e-3 * (b - a)
        if lo < a - slack or hi > b + slack:
            raise ModelError(
                f"the decoder's pixels span [{lo:.3f}, {hi:.3f}], outside --output-range "
                f"{a:g},{b:g}; give its real range (-1,1 for tanh, 0,1 for sigmoid)"
            )
        if not torch.allclose(x3[:1], x1, atol=1e-3, rtol=1e-3):
            raise ModelError(
                "the decoder makes a different image from the same latent in batches of 1 "
                "and 3; put it in eval mode (batch norm, dropout) before exporting"
            )
