"""`latentfuzz models import-pipeline`: a local Stable Diffusion pipeline folder as a model
(the import itself is engine/models/sd_import.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from engine.cli.common import HomeOpt, console
from engine.core.errors import LatentfuzzError
from engine.core.home import resolve_home


def register(zoo_app: typer.Typer) -> None:
    """Add `import-pipeline` to the `models` (`zoo`) group."""

    @zoo_app.command("import-pipeline")
    def import_pipeline_cmd(
        directory: Annotated[Path, typer.Argument(help="a diffusers Stable Diffusion folder")],
        dataset: Annotated[str, typer.Option(help="dataset whose classes the prompts name")],
        prompt: Annotated[str, typer.Option(help="class prompt template")] = "a photo of a {class}",
        lora: Annotated[Path | None, typer.Option(help="LoRA weights (.safetensors)")] = None,
        name: Annotated[str | None, typer.Option(help="model name [DATASET-FOLDER]")] = None,
        steps: Annotated[int, typer.Option(help="DDIM steps (GIFTbench: 15)")] = 15,
        guidance_seed: Annotated[float, typer.Option(help="guidance for seed images")] = 3.5,
        guidance_search: Annotated[float, typer.Option(help="guidance during search")] = 1.4,
        resolution: Annotated[
            int | None, typer.Option(help="image side the pipeline makes [its native]")
        ] = None,
        embeds: Annotated[
            Path | None,
            typer.Option(help="precomputed prompt_embeds/negative_prompt_embeds safetensors"),
        ] = None,
        negative_prompt: Annotated[str, typer.Option(help="unconditional prompt")] = "",
        classifier: Annotated[
            str | None, typer.Option(help="for viability: zoo name or TorchScript file")
        ] = None,
        measure_seeds: Annotated[
            int, typer.Option(help="seeds decoded to measure viability (0: skip)")
        ] = 100,  # sd_import.MEASURE_SEEDS, not imported: it would load torch for --help
        device: Annotated[str, typer.Option(help="where to measure: cpu | cuda")] = "cpu",
        data_dir: Annotated[str | None, typer.Option(help="folder of a local dataset")] = None,
        home: HomeOpt = None,
    ) -> None:
        """Import a local Stable Diffusion pipeline folder as a generator (card + prompt
        embeddings under $LATENTFUZZ_HOME/models); the folder is referenced, not copied."""
        # Here, not at the top: they import torch, which `latentfuzz --help` never loads.
        from pydantic import ValidationError

        # Deferred (start-up time: loads torch, duckdb, pyarrow).
        from engine.campaign.config import format_validation
        from engine.models.sd_import import import_pipeline

        resolve_home(home)
        try:
            card = import_pipeline(
                directory,
                dataset,
                prompt,
                name=name,
                lora=lora,
                embeds=embeds,
                negative_prompt=negative_prompt,
                steps=steps,
                guidance_seed=guidance_seed,
                guidance_search=guidance_search,
                resolution=resolution,
                classifier=classifier,
                measure_seeds=measure_seeds,
                device=device,
                data_dir=data_dir,
            )
        except ValidationError as e:
            raise LatentfuzzError(format_validation(e, where="options")) from None
        m, inf = card.get("metrics", {}), card["inference"]
        viab = f"viability {m['viability']:.3f}" if "viability" in m else "viability unmeasured"
        console.print(
            f"{card['name']}: latent {tuple(card['latent_shape'])}, {viab}, latent range "
            f"{card['latent_range']:.3f}, {inf['ms_per_image_b1']:.1f} ms/image (batch 1), "
            f"{inf['ms_per_image_b25']:.1f} ms/image (batch 25) on {inf['device']}"
        )
