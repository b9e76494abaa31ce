"""A local diffusers Stable Diffusion pipeline folder as a class-conditional generator.

The latent searched is the pipeline's initial noise, (4, R/s, R/s) for resolution R and
the VAE's scale factor s (8 for SD 1.5, so 4 x 64 x 64 at 512); the pipeline scales it by
the scheduler's ``init_noise_sigma`` itself. A class conditions the prompt through the
card's template ("a photo of a {class}"). The prompt embeddings (one per class, plus the
unconditional one of the empty prompt) are computed once at import
(`latentfuzz models import-pipeline`) and stored beside the card, so decoding needs neither
the text encoder nor the tokenizer: the pipeline is loaded without them.

The pipeline's scheduler is replaced by DDIM built from its config and run with eta = 0,
which adds no noise: a latent always gives the same image. Steps, the guidance for the
seed images (``seed_guidance``) and for the search (``guidance``), and the resolution are
options, as GIFTbench uses DDIM 15 steps with 3.5 for seeds and 1.4 during the search.
Images come back in [0, 1] and are resized to the dataset's size (bicubic, antialiased)
and converted to grey (ITU-R 601 luma, as PIL's "L") when the dataset has one channel.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from pydantic import Field
from safetensors.torch import load_file

from engine.core.errors import ModelError
from engine.core.untrusted import bounded
from engine.generators.base import GENERATORS, GeneratorOptions, GuidedGenerator
from engine.generators.sd_folder import PIPELINE_INDEX, check_folder

EMBEDS = "prompt_embeds.safetensors"
LORA = "lora.safetensors"
LUMA = (0.299, 0.587, 0.114)


class SDOptions(GeneratorOptions):
    steps: int = Field(15, ge=1, le=1000, description="DDIM denoising steps")
    # The pipeline guides only above 1 (1 or less: the class prompt alone).
    guidance: float = Field(
        1.4, ge=1.0, le=30.0, description="classifier-free guidance scale during the search"
    )
    seed_guidance: float | None = Field(
        None, ge=1.0, le=30.0, description="guidance for the seed images; default: guidance"
    )
    resolution: int | None = Field(
        None,
        ge=8,
        le=4096,
        multiple_of=8,
        description="side of the images the pipeline makes; default: the UNet's sample size "
        "x the VAE's scale factor (512 for SD 1.5)",
    )


def load_pipeline(path: str | Path, text_encoder: bool = False) -> Any:
    """``StableDiffusionPipeline.from_pretrained(path, local_files_only=True)`` with DDIM,
    no safety checker and, unless asked, no text encoder or tokenizer. ModelError (one
    line) when the folder is not a pipeline or the [sd] extra is missing."""
    path = Path(path).expanduser()
    if not path.is_dir():
        raise ModelError(f"pipeline folder {path} does not exist; expected a diffusers folder")
    if not (path / PIPELINE_INDEX).is_file():
        raise ModelError(
            f"{path} is not a diffusers pipeline folder (no {PIPELINE_INDEX}); expected the "
            "folder `StableDiffusionPipeline.save_pretrained` or a hub snapshot writes"
        )
    try:
        # Quiet first: importing the pipeline makes transformers warn about torchvision.
        from transformers.utils import logging as tlogging

        tlogging.set_verbosity_error()
        # Deferred (start-up time: loads diffusers).
        from diffusers import DDIMScheduler, StableDiffusionPipeline
        from diffusers.utils import logging as dlogging
    except ImportError as e:  # transformers absent: diffusers' pipeline class is a stub
        raise ModelError(
            f"Stable Diffusion pipelines need the [sd] extra: pip install 'latentfuzz[sd]' ({e})"
        ) from None
    index = check_folder(path)
    skip: dict[str, Any] = {"safety_checker": None, "feature_extractor": None}
    for part in ("text_encoder", "tokenizer"):
        # A folder saved without them records [null, null]; asking for them would fail.
        entry = index.get(part)
        if not text_encoder or not (isinstance(entry, list) and entry and entry[0]):
            skip[part] = None
    # Quiet: "you have disabled the safety checker" and loading bars on every load.
    for lib in (dlogging, tlogging):
        lib.set_verbosity_error()
        lib.disable_progress_bar()
    try:
        pipe = StableDiffusionPipeline.from_pretrained(str(path), local_files_only=True, **skip)
    except Exception as e:  # noqa: BLE001 - diffusers raises many kinds for a bad folder
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelError(
            f"{path}: StableDiffusionPipeline could not load it ({first}); expected a "
            "Stable Diffusion pipeline folder with unet/, vae/ and scheduler/"
        ) from None
    # DDIM with eta 0 is deterministic; the pipeline's own scheduler (PNDM for SD 1.5) is
    # swapped as GIFTbench does, keeping the training noise schedule from its config.
    pipe.scheduler = DDIMScheduler.from_config(pipe.scheduler.config)
    pipe.set_progress_bar_config(disable=True)
    return pipe


@GENERATORS.register("sd-pipeline")
class SDPipeline(GuidedGenerator):
    family = "sd-pipeline"
    conditional = True
    Options = SDOptions

    def __init__(
        self,
        image_shape: tuple[int, int, int],
        num_classes: int,
        pipeline: str,
        embeds: str = EMBEDS,
        lora: str | None = None,
        steps: int = 15,
        guidance: float = 1.4,
        seed_guidance: float | None = 3.5,
        resolution: int | None = None,
        folder: str | Path | None = None,
    ) -> None:
        """pipeline: the pipeline folder; embeds and lora: files in the model folder
        ``folder`` (relative names) or absolute paths."""
        super().__init__(tuple(image_shape), num_classes)
        base = Path(folder) if folder is not None else Path(".")
        self.pipe = load_pipeline(pipeline)
        if lora is not None:
            # Needs peft (in the [sd] extra). Only the UNet's layers are loaded here (what
            # load_lora_weights does, less the text encoder, which is not loaded): the text
            # encoder's layers are already in the stored embeddings.
            state, alphas, meta = self.pipe.lora_state_dict(
                str(base / lora), return_lora_metadata=True
            )
            self.pipe.load_lora_into_unet(
                state,
                network_alphas=alphas,
                unet=self.pipe.unet,
                metadata=meta,
                _pipeline=self.pipe,
            )
        # Registered so that .to(device) and .parameters() see them.
        self.unet, self.vae = self.pipe.unet, self.pipe.vae
        stored = load_file(str(base / embeds))
        cond, uncond = stored["prompt_embeds"], stored["negative_prompt_embeds"]
        if cond.ndim != 3 or cond.shape[0] != num_classes or uncond.shape != cond.shape[1:]:
            raise ModelError(
                f"{base / embeds}: prompt_embeds {tuple(cond.shape)} and negative_prompt_embeds "
                f"{tuple(uncond.shape)}, expected ({num_classes}, L, D) and (L, D); "
                "re-import the pipeline"
            )
        self.register_buffer("cond", cond.float(), persistent=False)
        self.register_buffer("uncond", uncond.float(), persistent=False)
        self.scale = int(self.pipe.vae_scale_factor)
        size = self.unet.config.sample_size
        self.native = int(size if isinstance(size, int) else size[0]) * self.scale
        # SDOptions' largest resolution: a VAE with many blocks scales even a small UNet up.
        bounded(self.native, 4096, f"{pipeline}: the UNet's sample_size x the VAE's scale factor")
        self.configure(
            steps=steps, guidance=guidance, seed_guidance=seed_guidance, resolution=resolution
        )

    @classmethod
    def from_card(cls, card: dict[str, Any], folder: Path) -> SDPipeline:
        # The weights are the pipeline folder's, referenced, not copied: refuse it when its
        # files changed since the import (sizes only, so a 4 GB folder loads at once; the
        # card keeps every file's SHA-256 for a full check).
        pipeline = Path(card["params"]["pipeline"])
        for rel, meta in (card.get("pipeline_files") or {}).items():
            p = pipeline / rel
            size = p.stat().st_size if p.is_file() else None
            if size != meta["size"]:
                now = "is missing" if size is None else f"has {size:,} bytes"
                raise ModelError(
                    f"model {card['name']}: {p} {now}, the card recorded {meta['size']:,} at "
                    "import; restore the pipeline folder or import it again "
                    "(latentfuzz models import-pipeline)"
                )
        return cls(**card["params"], folder=folder)

    def configure(self, **options) -> None:
        current = self.options() if hasattr(self, "steps") else {}
        opts = SDOptions(**{**current, **options})
        self.steps, self.guidance = opts.steps, opts.guidance
        self.seed_guidance = opts.guidance if opts.seed_guidance is None else opts.seed_guidance
        self.resolution = opts.resolution or self.native

    def options(self) -> dict:
        return {
            "steps": self.steps,
            "guidance": self.guidance,
            "seed_guidance": self.seed_guidance,
            "resolution": self.resolution,
        }

    @property
    def latent_shape(self) -> tuple[int, ...]:
        side = self.resolution // self.scale
        return (int(self.unet.config.in_channels), side, side)

    def _decode(self, z: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        n = z.shape[0]
        x = self.pipe(
            prompt_embeds=self.cond[labels],
            negative_prompt_embeds=self.uncond.expand(n, *self.uncond.shape),
            latents=z.to(self.unet.dtype),
            height=self.resolution,
            width=self.resolution,
            num_inference_steps=self.steps,
            guidance_scale=self.guidance,
            eta=0.0,
            output_type="pt",
        ).images.float()
        c, h, w = self.image_shape
        if (h, w) != tuple(x.shape[-2:]):
            # Bicubic overshoots at edges: clamp before the grey conversion, as PIL would.
            x = F.interpolate(x, size=(h, w), mode="bicubic", antialias=True, align_corners=False)
            x = x.clamp(0.0, 1.0)
        if c == 1:
            x = torch.tensordot(x.new_tensor(LUMA), x, dims=([0], [1])).unsqueeze(1)
        return x.clamp(0.0, 1.0)
