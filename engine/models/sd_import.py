"""A local Stable Diffusion pipeline folder as a model of the user's zoo (the logic of
`latentfuzz models import-pipeline`).

The card references the pipeline folder by its absolute path instead of copying it: SD 1.5
is 4 to 5 GB, and a copy would double the disk and the import time. What it references is
pinned: the card lists every file's size and SHA-256, and loading refuses a folder whose
files or sizes changed since the import. The LoRA file (megabytes) and the per-class prompt
embeddings are copied into the model folder, so the campaign needs no text encoder.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from engine.core.errors import LatentfuzzError
from engine.core.files import sha256
from engine.datasets import get_dataset
from engine.generators import Generator
from engine.generators.sd import EMBEDS, LORA, SDOptions, SDPipeline, load_pipeline
from engine.models import zoo
from engine.models.measure import N_LATENTS, latent_bounds, ms_per_image, viability

MEASURE_SEEDS = 100
TIMING_BATCHES = (1, 25)
TIMING_REPEATS = 3  # an SD image takes seconds; 20 repeats (the zoo's) would take minutes


def folder_manifest(folder: Path) -> dict[str, dict[str, Any]]:
    """Every file under folder (hidden ones aside, e.g. a hub cache's .locks): its size and
    SHA-256, by path relative to folder. Symlinks (hub snapshots) are followed."""
    files = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            files[rel.as_posix()] = {"size": p.stat().st_size, "sha256": sha256(p)}
    return files


def manifest_sha(files: dict[str, dict[str, Any]]) -> str:
    """One hash for a whole folder: of its sorted (path, file hash) lines."""
    lines = "".join(f"{k}\t{v['sha256']}\n" for k, v in sorted(files.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


def class_prompts(template: str, class_names: tuple[str, ...]) -> list[str]:
    """One prompt per class: the template with ``{class}`` replaced by the class name."""
    if "{class}" not in template:
        raise LatentfuzzError(
            f"prompt template {template!r} has no {{class}}; expected e.g. "
            "--prompt 'a photo of a {class}'"
        )
    # str.replace, not format: a template may hold other braces.
    return [template.replace("{class}", name) for name in class_names]


def prompt_embeddings(pipe: Any, prompts: list[str], negative: str) -> dict[str, Any]:
    """Per-class prompt embeddings (K, L, D) and the unconditional one (L, D), from the
    pipeline's tokenizer and text encoder (with any LoRA already loaded into it)."""
    if pipe.text_encoder is None or pipe.tokenizer is None:
        raise LatentfuzzError(
            "the pipeline folder has no text_encoder or tokenizer to compute the class "
            "prompts' embeddings; add them, or give --embeds FILE (safetensors with "
            "prompt_embeds (K, L, D) and negative_prompt_embeds (L, D))"
        )
    with torch.inference_mode():
        cond, uncond = pipe.encode_prompt(
            prompts, torch.device("cpu"), 1, True, negative_prompt=[negative] * len(prompts)
        )
    return {
        "prompt_embeds": cond.float().contiguous(),
        "negative_prompt_embeds": uncond[0].float().contiguous(),
    }


def given_embeddings(path: Path, num_classes: int) -> dict[str, Any]:
    """The prompt embeddings of an ``--embeds`` safetensors file, checked against the
    dataset's number of classes."""
    try:
        stored = load_file(str(path))
    except Exception as e:  # noqa: BLE001 - any read failure means not a safetensors file
        raise LatentfuzzError(f"--embeds {path}: not a readable safetensors file ({e})") from None
    cond, uncond = stored.get("prompt_embeds"), stored.get("negative_prompt_embeds")
    if (
        cond is None
        or uncond is None
        or cond.ndim != 3
        or cond.shape[0] != num_classes
        or (tuple(uncond.shape) != tuple(cond.shape[1:]))
    ):
        got = {k: tuple(v.shape) for k, v in stored.items()}
        raise LatentfuzzError(
            f"--embeds {path}: holds {got}, expected prompt_embeds ({num_classes}, L, D) "
            "and negative_prompt_embeds (L, D)"
        )
    return {
        "prompt_embeds": cond.float().contiguous(),
        "negative_prompt_embeds": uncond.float().contiguous(),
    }


def measure_pipeline(
    gen: Generator, dataset: str, classifier: str | None, seeds: int, device: str
) -> dict[str, Any]:
    """Latent bounds (GIFTbench's: 1,000 N(0, I) latents, no decoding), viability on
    ``seeds`` seeds decoded with the seed guidance, and seconds per image."""
    rng = torch.Generator().manual_seed(0)
    z = gen.sample_prior(N_LATENTS, rng)
    labels = (torch.arange(N_LATENTS) % gen.num_classes).to(gen.device)
    out: dict[str, Any] = latent_bounds(z)
    if seeds > 0:
        try:
            ref = zoo.resolve("classifier", dataset, classifier)
        except LatentfuzzError:
            if classifier is not None:
                raise  # the one named does not exist: say so
            ref = None  # no classifier for this dataset yet: viability is left unmeasured
        if ref is not None:
            clf = zoo.load_classifier(ref, dataset, device)
            with gen.seeding():
                share = viability(gen, z[:seeds], labels[:seeds], clf)
            out["metrics"] = {
                "viability": share,
                "viability_classifier": ref,
                "viability_seeds": seeds,
                "viability_how": "conditional samples (classes in turn) the classifier "
                "assigns to their prompt's class, decoded with the seed guidance",
            }
    out["inference"] = {
        f"ms_per_image_b{b}": round(
            ms_per_image(lambda n: gen.decode(z[:n], labels[:n]), b, TIMING_REPEATS), 4
        )
        for b in TIMING_BATCHES
    }
    out["inference"]["device"] = device
    return out


def import_pipeline(
    directory: Path,
    dataset: str,
    prompt: str,
    name: str | None = None,
    lora: Path | None = None,
    embeds: Path | None = None,
    negative_prompt: str = "",
    steps: int = 15,
    guidance_seed: float = 3.5,
    guidance_search: float = 1.4,
    resolution: int | None = None,
    classifier: str | None = None,
    measure_seeds: int = MEASURE_SEEDS,
    device: str = "cpu",
    data_dir: str | None = None,
) -> dict[str, Any]:
    """Write a measured sd-pipeline card (and its embeddings, and LoRA) into the user's
    models folder; returns the card. Nothing is left behind when a step fails."""
    # Deferred (start-up time: loads diffusers).
    import diffusers  # the optional [sd] extra, slow to import: only for this command

    directory = directory.expanduser().resolve()
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise LatentfuzzError(f"--device {device} but no CUDA device is available; use cpu")
    ds = get_dataset(dataset, data_dir)
    prompts = class_prompts(prompt, ds.class_names)
    name = name or f"{dataset}-{re.sub(r'[^A-Za-z0-9._-]+', '-', directory.name)}"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise LatentfuzzError(f"model name {name!r}: use letters, digits, '.', '_' and '-'")
    if name in {c["name"] for c in zoo.list_cards()}:
        raise LatentfuzzError(
            f"a model named {name!r} exists already; pick another --name or delete "
            f"{zoo.user_models_dir() / name}"
        )
    if lora is not None and not lora.is_file():
        raise LatentfuzzError(f"--lora {lora}: no such file; expected a LoRA .safetensors")
    opts = SDOptions(
        steps=steps, guidance=guidance_search, seed_guidance=guidance_seed, resolution=resolution
    )
    pipe = load_pipeline(directory, text_encoder=embeds is None)
    if lora is not None:
        try:  # into the text encoder too, before the prompts are embedded
            pipe.load_lora_weights(str(lora))
        except Exception as e:  # noqa: BLE001 - peft and diffusers raise many kinds
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise LatentfuzzError(
                f"--lora {lora}: not loadable as LoRA weights for this pipeline ({first}); "
                "expected a diffusers or kohya LoRA .safetensors trained for this base model"
            ) from None
    vectors = (
        given_embeddings(embeds, ds.num_classes)
        if embeds is not None
        else prompt_embeddings(pipe, prompts, negative_prompt)
    )
    del pipe
    files = folder_manifest(directory)
    root = zoo.user_models_dir()
    root.mkdir(parents=True, exist_ok=True)
    # Built in a hidden sibling and renamed at the end: never a half-written model.
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    try:
        save_file(vectors, str(tmp / EMBEDS))
        if lora is not None:
            shutil.copyfile(lora, tmp / LORA)
        params = {
            "image_shape": list(ds.shape),
            "num_classes": ds.num_classes,
            "pipeline": str(directory),
            "embeds": EMBEDS,
            "lora": LORA if lora is not None else None,
            **opts.model_dump(),
        }
        card: dict[str, Any] = {
            "name": name,
            "kind": "generator",
            "family": "sd-pipeline",
            "dataset": dataset,
            "default": False,
            "params": params,
        }
        t0 = time.perf_counter()
        gen = SDPipeline.from_card(card, tmp).eval().to(device)
        _, h, w = ds.shape
        same = gen.resolution == h == w
        resize = "" if same else f", resized to {h}x{w} (bicubic, antialiased)"
        own = [sha256(tmp / EMBEDS)] + ([sha256(tmp / LORA)] if lora else [])
        card.update(
            {
                "latent_shape": list(gen.latent_shape),
                "parameters": sum(p.numel() for p in gen.parameters()),
                "prompt_template": prompt,
                "negative_prompt": negative_prompt,
                "class_prompts": prompts,
                "embeddings": "computed at import with the pipeline's text encoder"
                if embeds is None
                else f"given: {embeds}",
                "pipeline_files": files,
                "lora_source": None if lora is None else str(lora),
                "sampler": f"DDIM, eta 0, {gen.steps} steps, classifier-free guidance "
                f"{gen.seed_guidance} for seeds and {gen.guidance} during the search, "
                f"{gen.resolution}px{resize}",
                "created": datetime.now(UTC).isoformat(timespec="seconds"),
                "torch": torch.__version__,
                "diffusers": diffusers.__version__,
                "sha256": hashlib.sha256((manifest_sha(files) + "".join(own)).encode()).hexdigest(),
                "training": {"command": "latentfuzz models import-pipeline (not trained here)"},
            }
        )
        card.update(measure_pipeline(gen, dataset, classifier, measure_seeds, device))
        card["import_seconds"] = round(time.perf_counter() - t0, 1)
        (tmp / zoo.CARD).write_text(json.dumps(card, indent=2) + "\n")
        tmp.rename(root / name)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return card
