"""A class-conditional diffusion model on diffusers: UNet2DModel + DDIM, classifier-free guidance.

The latent searched is the initial noise x_T. Decoding runs DDIM with eta = 0, which adds
no noise, so a latent always gives the same image. To keep a CPU campaign affordable the
UNet may work at a lower resolution (``sample_side``, e.g. 14 for 28x28 MNIST) and the
result is upsampled bicubically, much as Stable Diffusion denoises a smaller latent: the
default classifier labels MNIST test digits downsampled to 14x14 and back 98.0% correctly
(98.5% at full size). Steps and two guidance scales are options (``generator_params`` of
a campaign): ``seed_guidance`` makes the seed images, whose viability is checked, and
``guidance`` decodes the search's candidates, as GIFTbench uses 3.5 for seeds and 1.4
during the search. The zoo card's defaults are measured (``latentfuzz models measure``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import Field

from engine.generators.base import GENERATORS, GeneratorOptions, GuidedGenerator


class DMOptions(GeneratorOptions):
    steps: int = Field(4, ge=1, le=1000, description="DDIM denoising steps")
    guidance: float = Field(
        2.0, ge=0.0, le=20.0, description="classifier-free guidance scale during the search"
    )
    seed_guidance: float | None = Field(
        None, ge=0.0, le=20.0, description="guidance for the seed images; default: guidance"
    )


@GENERATORS.register("dm")
class DiffusionModel(GuidedGenerator):
    family = "dm"
    conditional = True
    Options = DMOptions

    def __init__(
        self,
        image_shape: tuple[int, int, int] = (1, 28, 28),
        num_classes: int = 10,
        channels: tuple[int, ...] = (16, 32),
        layers_per_block: int = 1,
        train_timesteps: int = 1000,
        steps: int = 4,
        guidance: float = 2.0,
        sample_side: int | None = None,
        seed_guidance: float | None = None,
    ) -> None:
        # Deferred (start-up time: loads diffusers).
        from diffusers import UNet2DModel  # here, not at the top: a fast start for vae/gan

        super().__init__(tuple(image_shape), num_classes)
        c, h, _ = image_shape
        self.side = sample_side or h
        self.unet = UNet2DModel(
            sample_size=self.side,
            in_channels=c,
            out_channels=c,
            block_out_channels=tuple(channels),
            layers_per_block=layers_per_block,
            norm_num_groups=8,
            down_block_types=("DownBlock2D",) * len(channels),
            up_block_types=("UpBlock2D",) * len(channels),
            num_class_embeds=num_classes + 1,  # the last embedding is "no class", for CFG
        )
        self.scheduler_config = {
            "num_train_timesteps": train_timesteps,
            "beta_schedule": "squaredcos_cap_v2",
            "clip_sample": True,
            "prediction_type": "epsilon",
        }
        self.configure(steps=steps, guidance=guidance, seed_guidance=seed_guidance)

    @property
    def latent_shape(self) -> tuple[int, ...]:
        return (self.image_shape[0], self.side, self.side)

    def to_model_space(self, x: torch.Tensor) -> torch.Tensor:
        """Images (B, C, H, W) in [0, 1] -> the UNet's training space, [-1, 1] at its side."""
        if self.side != self.image_shape[1]:
            x = F.interpolate(x, size=self.side, mode="area")
        return x * 2 - 1

    def configure(self, **options) -> None:
        # Deferred (start-up time: loads diffusers).
        from diffusers import DDIMScheduler  # as in __init__: a fast start for vae/gan

        current = self.options() if hasattr(self, "steps") else {}
        opts = DMOptions(**{**current, **options})
        self.steps, self.guidance = opts.steps, opts.guidance
        self.seed_guidance = opts.guidance if opts.seed_guidance is None else opts.seed_guidance
        self.scheduler = DDIMScheduler(**self.scheduler_config)
        self.scheduler.set_timesteps(self.steps)

    def options(self) -> dict:
        return {"steps": self.steps, "guidance": self.guidance, "seed_guidance": self.seed_guidance}

    def eps(self, x: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Guided noise prediction; conditional and unconditional passes in one batch."""
        if self.guidance == 1.0:
            return self.unet(x, t, class_labels=labels).sample
        null = torch.full_like(labels, self.num_classes)
        out = self.unet(torch.cat([x, x]), t, class_labels=torch.cat([labels, null])).sample
        cond, uncond = out.chunk(2)
        return uncond + self.guidance * (cond - uncond)

    def _decode(self, z: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        x = z
        for t in self.scheduler.timesteps:
            x = self.scheduler.step(self.eps(x, t, labels), t, x, eta=0.0).prev_sample
        x = x.add(1.0).mul(0.5)
        if self.side != self.image_shape[1]:
            x = F.interpolate(x, size=self.image_shape[1:], mode="bicubic", align_corners=False)
        return x.clamp(0.0, 1.0)
