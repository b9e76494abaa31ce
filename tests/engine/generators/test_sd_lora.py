"""LoRA weights on a local Stable Diffusion pipeline folder (engine/generators/sd.py):
loaded, they change the images."""

from __future__ import annotations

from pathlib import Path

import torch

from engine.core.files import sha256
from engine.models import zoo

# The tiny pipeline, its imported model and a campaign config (module-scoped there).
from tests.engine.generators.test_sd_pipeline import campaign_config, cli, world  # noqa: F401


def write_lora(pipeline: Path, path: Path) -> Path:
    """Random LoRA weights for the tiny UNet's attention, saved the way diffusers'
    training scripts save theirs."""
    from diffusers import StableDiffusionPipeline, UNet2DConditionModel
    from diffusers.utils import convert_state_dict_to_diffusers
    from peft import LoraConfig
    from peft.utils import get_peft_model_state_dict
    from transformers import CLIPTextModel

    torch.manual_seed(1)
    layers = {}
    for part, cls, targets in (
        ("unet", UNet2DConditionModel, ["to_q", "to_k", "to_v", "to_out.0"]),
        ("text_encoder", CLIPTextModel, ["q_proj", "k_proj", "v_proj", "out_proj"]),
    ):
        model = cls.from_pretrained(str(pipeline / part))
        # Not the usual zero init: a LoRA that changes nothing would prove nothing.
        model.add_adapter(
            LoraConfig(r=2, lora_alpha=2, init_lora_weights=False, target_modules=targets)
        )
        layers[f"{part}_lora_layers"] = convert_state_dict_to_diffusers(
            get_peft_model_state_dict(model)
        )
    StableDiffusionPipeline.save_lora_weights(str(path.parent), weight_name=path.name, **layers)
    return path


def test_lora_weights_change_the_images(world: dict, tmp_path: Path):
    from safetensors.torch import load_file

    lora = write_lora(world["pipe"], tmp_path / "style.safetensors")
    out = cli(
        [
            "models",
            "import-pipeline",
            str(world["pipe"]),
            "--dataset",
            "cifar10",
            "--lora",
            str(lora),
            "--name",
            "tiny-sd-lora",
            "--steps",
            "2",
            "--measure-seeds",
            "0",
        ],
        world["home"],
    )
    assert out.exit_code == 0, out.output
    models = world["home"] / "models"
    card = zoo.load_card("tiny-sd-lora", models)
    assert card["params"]["lora"] == "lora.safetensors"
    assert sha256(models / "tiny-sd-lora" / "lora.safetensors") == sha256(lora)
    assert card["sha256"] != zoo.load_card("tiny-sd", models)["sha256"]
    # The text encoder's LoRA layers act at import, on the stored prompt embeddings.
    embeds = [
        load_file(str(models / n / "prompt_embeds.safetensors"))["prompt_embeds"]
        for n in ("tiny-sd", "tiny-sd-lora")
    ]
    assert not torch.allclose(*embeds, atol=1e-4)
    z = torch.randn(2, 4, 16, 16, generator=torch.Generator().manual_seed(0))
    y = torch.tensor([0, 1])
    plain = zoo.load_generator("tiny-sd", root=models).decode(z, y)
    styled = zoo.load_generator("tiny-sd-lora", root=models).decode(z, y)
    assert not torch.allclose(plain, styled, atol=1e-3)
