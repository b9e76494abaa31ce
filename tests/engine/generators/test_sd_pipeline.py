"""A local Stable Diffusion pipeline folder as a generator (family sd-pipeline).

A tiny random pipeline (UNet2DConditionModel, AutoencoderKL, DDIM and a CLIP text encoder
built from small configs, sizes chosen after diffusers' own pipeline tests; a tokenizer
from vocabulary files the test writes) is saved to a temporary folder, imported with
`latentfuzz models import-pipeline` and searched by `latentfuzz run`, on CIFAR-10 batches
the test writes, with a TorchScript classifier. Nothing is downloaded.
"""

from __future__ import annotations

import json
import pickle
import shutil
import signal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from engine.core.errors import ModelError
from engine.models import zoo
from store import Store
from store import campaigns as sc

CIFAR_CLASSES = 10


class BrighterLeft(nn.Module):
    """Class 0 when the left half is brighter than the right, else class 1; the others
    never win. A random pipeline makes both about equally often."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = x[..., :16].mean(dim=(1, 2, 3)) - x[..., 16:].mean(dim=(1, 2, 3))
        logits = torch.full((x.shape[0], 10), -10.0)
        logits[:, 0] = 50 * d
        logits[:, 1] = -50 * d
        return logits


def write_cifar(root: Path) -> None:
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {
            b"data": rng.integers(0, 256, (10, 3072), dtype=np.uint8),
            b"labels": list(range(10)),
        }
        with open(folder / name, "wb") as f:
            pickle.dump(batch, f)


def write_tokenizer(folder: Path):
    """A CLIP tokenizer from vocabulary files written here (no hub): GPT-2's byte-level
    alphabet, each character also as a word end, and no merges, so each character is a
    token."""
    from transformers import CLIPTokenizer

    byte_values = [*range(33, 127), *range(161, 173), *range(174, 256)]
    shifted = [b for b in range(256) if b not in byte_values]
    chars = [chr(b) for b in byte_values] + [chr(256 + i) for i in range(len(shifted))]
    vocab = {t: i for i, t in enumerate(chars + [c + "</w>" for c in chars])}
    vocab.update({"<|startoftext|>": len(vocab), "<|endoftext|>": len(vocab) + 1})
    folder.mkdir(parents=True)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    return CLIPTokenizer.from_pretrained(str(folder), model_max_length=77)


def tiny_pipeline(folder: Path, text_encoder: bool = True) -> Path:
    from diffusers import (
        AutoencoderKL,
        DDIMScheduler,
        StableDiffusionPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        block_out_channels=(4, 8),
        layers_per_block=1,
        sample_size=16,
        in_channels=4,
        out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=8,
        norm_num_groups=2,
    )
    # Two blocks: a scale factor of 2, so the UNet's 16 x 16 latent makes 32 x 32 images.
    vae = AutoencoderKL(
        block_out_channels=[4, 8],
        in_channels=3,
        out_channels=3,
        latent_channels=4,
        down_block_types=["DownEncoderBlock2D"] * 2,
        up_block_types=["UpDecoderBlock2D"] * 2,
        norm_num_groups=2,
    )
    scheduler = DDIMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )
    parts: dict = {"text_encoder": None, "tokenizer": None}
    if text_encoder:
        enc = CLIPTextModel(
            CLIPTextConfig(
                bos_token_id=512,
                eos_token_id=513,
                pad_token_id=513,
                hidden_size=8,
                intermediate_size=16,
                num_attention_heads=2,
                num_hidden_layers=2,
                vocab_size=600,
                max_position_embeddings=77,
            )
        )
        parts = {"text_encoder": enc, "tokenizer": write_tokenizer(folder.parent / "tok")}
    pipe = StableDiffusionPipeline(
        unet=unet,
        vae=vae,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        image_encoder=None,
        requires_safety_checker=False,
        **parts,
    )
    pipe.save_pretrained(str(folder))
    return folder


def cli(args: list[str], home: Path):
    """`latentfuzz ARGS --home HOME` in this process (a subprocess would spend most of the
    test importing torch, diffusers and transformers again); the process-wide home and
    the signal handlers `run` installs are put back afterwards."""
    from typer.testing import CliRunner

    from engine.cli.main import app
    from engine.core import home as home_mod

    kept = home_mod._current, signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        return CliRunner().invoke(app, [*args, "--home", str(home)])
    finally:
        home_mod._current = kept[0]
        signal.signal(signal.SIGINT, kept[1])
        signal.signal(signal.SIGTERM, kept[2])


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict:
    """A pipeline folder, CIFAR-10 batches, a classifier file and a home with the
    pipeline imported through the CLI."""
    root = tmp_path_factory.mktemp("sd")
    write_cifar(root / "data")
    clf = root / "brighter-left.pt"
    torch.jit.save(torch.jit.script(BrighterLeft()), str(clf))
    pipe = tiny_pipeline(root / "tiny-sd")
    home = root / "home"
    out = cli(
        [
            "models",
            "import-pipeline",
            str(pipe),
            "--dataset",
            "cifar10",
            "--data-dir",
            str(root / "data"),
            "--prompt",
            "a photo of a {class}",
            "--name",
            "tiny-sd",
            "--steps",
            "2",
            "--classifier",
            str(clf),
            "--measure-seeds",
            "20",
        ],
        home,
    )
    assert out.exit_code == 0, out.output
    return {"root": root, "pipe": pipe, "clf": clf, "home": home, "out": out.output}


def campaign_config(world: dict, seed: int = 3) -> dict:
    return {
        "dataset": "cifar10",
        "data_dir": str(world["root"] / "data"),
        "generator": "tiny-sd",
        "classifier": str(world["clf"]),
        "seeds": 4,
        "seed": seed,
        "target_class": 0,
        "strategy_params": {
            "generations": 2,
            "population": 6,
            "best_left": 2,
            "perturbation": "custom",
            "step": 0.5,
        },
    }


def test_import_writes_a_measured_card(world: dict):
    card = zoo.load_card("tiny-sd", world["home"] / "models")
    assert card["family"] == "sd-pipeline" and card["kind"] == "generator"
    assert card["latent_shape"] == [4, 16, 16]
    assert card["params"]["pipeline"] == str(world["pipe"].resolve())
    assert card["params"]["guidance"] == 1.4 and card["params"]["seed_guidance"] == 3.5
    assert card["class_prompts"][9] == "a photo of a truck"
    assert "unet/diffusion_pytorch_model.safetensors" in card["pipeline_files"]
    lo, hi = card["latent_bounds"]
    assert lo < -2 < 2 < hi  # 1,000 N(0, I) latents of 1,024 values each
    assert 0.0 <= card["metrics"]["viability"] <= 1.0
    assert card["inference"]["ms_per_image_b1"] > 0
    assert "tiny-sd: latent (4, 16, 16)" in " ".join(world["out"].split())
    assert not [p for p in (world["home"] / "models").iterdir() if p.name.startswith(".")]


def test_decode_is_deterministic_and_follows_the_options(world: dict):
    gen = zoo.load_generator("tiny-sd", root=world["home"] / "models")
    z = gen.sample_prior(3, torch.Generator().manual_seed(0))
    y = torch.tensor([0, 1, 9])
    a, b = gen.decode(z, y), gen.decode(z, y)
    assert a.shape == (3, 3, 32, 32) and torch.equal(a, b)
    with gen.seeding():
        seeded = gen.decode(z, y)
    assert not torch.equal(seeded, a)  # guidance 3.5 for seeds, 1.4 for the search
    assert not torch.equal(gen.decode(z, torch.tensor([1, 0, 0])), a)  # the prompt counts
    gen.configure(resolution=16)  # half size: an 8 x 8 latent, resized up (bicubic)
    assert gen.latent_shape == (4, 8, 8)
    assert gen.decode(z[:, :, :8, :8], y).shape == (3, 3, 32, 32)


def test_same_campaign_twice_gives_the_same_results(world: dict):
    """Through the same runner and CLI as every generator; run twice with one seed."""
    cfg = world["root"] / "campaign.yaml"
    cfg.write_text(json.dumps(campaign_config(world)))  # JSON is YAML
    for _ in range(2):
        out = cli(["run", "--config", str(cfg), "--quiet"], world["home"])
        assert out.exit_code == 0, out.output
        assert "viable seeds" in out.output
    store = Store(world["home"] / "latentfuzz.duckdb")
    a, b = sc.list_campaigns(store)["id"].tolist()[:2]
    tables = []
    for cid in (a, b):
        s = sc.seeds(store, cid)[
            [
                "seed_idx",
                "seed_label",
                "seed_pred",
                "seed_margin",
                "viable",
                "status",
                "iterations",
                "final_pred",
                "final_fitness",
                "latent_distance",
            ]
        ]
        ind = pd.concat([sc.individuals(store, cid, i) for i in range(4)])
        tables.append((s, ind.reset_index(drop=True)))
    pd.testing.assert_frame_equal(tables[0][0], tables[1][0])
    pd.testing.assert_frame_equal(tables[0][1], tables[1][1])
    assert tables[0][0]["viable"].any(), "no viable seed: the search never ran"
    assert len(tables[0][1]) > 0


def test_changed_pipeline_folder_is_refused(world: dict, tmp_path: Path):
    models = tmp_path / "models"
    shutil.copytree(world["home"] / "models" / "tiny-sd", models / "tiny-sd")
    card = json.loads((models / "tiny-sd" / zoo.CARD).read_text())
    card["pipeline_files"]["vae/config.json"]["size"] += 1
    (models / "tiny-sd" / zoo.CARD).write_text(json.dumps(card))
    with pytest.raises(ModelError, match="vae/config.json has .* bytes, the card recorded"):
        zoo.load_generator("tiny-sd", root=models)


def test_import_refuses_what_is_not_a_pipeline(world: dict, tmp_path: Path):
    out = cli(["models", "import-pipeline", str(tmp_path), "--dataset", "cifar10"], tmp_path)
    assert isinstance(out.exception, ModelError)  # the CLI prints its message as one line
    assert "is not a diffusers pipeline folder (no model_index.json)" in str(out.exception)
    assert not (tmp_path / "models").exists() or not any((tmp_path / "models").iterdir())
    # A failure after the model folder was begun (here: measuring) leaves nothing behind.
    out = cli(
        [
            "models",
            "import-pipeline",
            str(world["pipe"]),
            "--dataset",
            "cifar10",
            "--steps",
            "1",
            "--classifier",
            "nonesuch",
        ],
        tmp_path,
    )
    assert "no classifier 'nonesuch'" in str(out.exception)
    assert (tmp_path / "models").is_dir() and not any((tmp_path / "models").iterdir())
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not a safetensors file")
    out = cli(
        [
            "models",
            "import-pipeline",
            str(world["pipe"]),
            "--dataset",
            "cifar10",
            "--lora",
            str(junk),
        ],
        tmp_path,
    )
    assert "not loadable as LoRA weights" in str(out.exception)


def test_embeddings_given_when_the_folder_has_no_text_encoder(world: dict, tmp_path: Path):
    """Import in-process: without a tokenizer the command asks for --embeds, and accepts
    precomputed ones."""
    from safetensors.torch import save_file

    from engine.core import home as home_mod
    from engine.core.errors import LatentfuzzError
    from engine.models.sd_import import import_pipeline

    bare = tiny_pipeline(tmp_path / "bare", text_encoder=False)
    kept = home_mod._current
    try:
        home_mod.resolve_home(tmp_path / "home")
        kw = {
            "name": "bare",
            "steps": 1,
            "measure_seeds": 0,
            "data_dir": str(world["root"] / "data"),
        }
        with pytest.raises(LatentfuzzError, match="no text_encoder or tokenizer.*--embeds"):
            import_pipeline(bare, "cifar10", "a {class}", **kw)
        embeds = tmp_path / "embeds.safetensors"
        save_file(
            {"prompt_embeds": torch.randn(10, 77, 8), "negative_prompt_embeds": torch.randn(77, 8)},
            str(embeds),
        )
        card = import_pipeline(bare, "cifar10", "a {class}", embeds=embeds, **kw)
        assert card["embeddings"].startswith("given")
        gen = zoo.load_generator("bare", root=tmp_path / "home" / "models")
        assert gen.decode(torch.zeros(1, 4, 16, 16), torch.tensor([2])).shape == (1, 3, 32, 32)
    finally:
        home_mod._current = kept


def test_images_fit_the_dataset_shape(world: dict):
    """A 32-pixel pipeline for a 28 x 28 grey dataset: resized (bicubic, antialiased),
    then ITU-R 601 luma."""
    from engine.generators.sd import SDPipeline

    models = world["home"] / "models"
    card = zoo.load_card("tiny-sd", models)
    z = torch.randn(2, 4, 16, 16, generator=torch.Generator().manual_seed(5))
    y = torch.tensor([3, 4])
    out = {}
    for c in (3, 1):
        params = {**card["params"], "image_shape": [c, 28, 28]}
        out[c] = SDPipeline.from_card({**card, "params": params}, models / "tiny-sd").decode(z, y)
    assert out[3].shape == (2, 3, 28, 28) and out[1].shape == (2, 1, 28, 28)
    luma = 0.299 * out[3][:, 0] + 0.587 * out[3][:, 1] + 0.114 * out[3][:, 2]
    torch.testing.assert_close(out[1][:, 0], luma.clamp(0, 1), atol=1e-5, rtol=0)
