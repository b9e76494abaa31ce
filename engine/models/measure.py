"""Measurements model cards carry, taken on the stored weights.

- Test accuracy, for classifier cards.
- Latent bounds, GIFTbench's way: min and max over 1,000 latents (encoded test images for
  encoder generators, N(0, I) samples otherwise); r = max - min; low = r 1e-4, high = r 1e-3.
- Viability, the way a campaign checks a seed: the share of 1,000 seeds (encoded test
  images, or 100 samples per class) that the default classifier gives the intended label.
- Inference time per image at batch 1 and 25 (`latentfuzz bench generators` refreshes it).
- For generators with a guidance scale: viability at each scale of a grid, and the
  defaults it implies. Seeds use the scale with the highest viability; the search uses the
  lowest scale whose viability is within GUIDANCE_TOLERANCE of that best, as GIFTbench
  lowers guidance for the search (3.5 for seeds, 1.4 during the search).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from engine.core.errors import ConfigError
from engine.datasets import Dataset, get_dataset
from engine.generators import Generator
from engine.models import zoo

N_LATENTS = 1000
GUIDANCE_GRID = (1.0, 1.4, 2.0, 3.5, 5.0)
GUIDANCE_TOLERANCE = 0.05


@torch.no_grad()
def accuracy(
    predict: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    batch: int = 500,
) -> float:
    """Share of images x (N, C, H, W) whose predicted logits' argmax is their label y (N,)."""
    correct = sum(
        int((predict(x[i : i + batch]).argmax(1) == y[i : i + batch]).sum())
        for i in range(0, len(y), batch)
    )
    return correct / len(y)


@torch.no_grad()
def chance_note(card: dict[str, Any]) -> str | None:
    """A warning, in words, for a classifier whose measured test accuracy is about chance
    (1 / K, within 5 points or half of chance, whichever is less): a model added with
    12.1% on 10 classes was almost surely fed other data or other preprocessing than it
    was trained on. None when it is not (or nothing was measured)."""
    accuracy = (card.get("metrics") or {}).get("test_accuracy")
    k = card.get("classes") or len(card.get("class_names") or [])
    if accuracy is None or k < 2:
        return None
    chance = 1 / k
    if accuracy > chance + min(0.05, chance / 2):
        return None
    return (
        f"{accuracy:.1%} on the {card['dataset']} test split: about chance ({chance:.0%}); "
        "is it the right dataset or preprocessing?"
    )


def ms_per_image(fn: Callable[[int], Any], batch: int, repeats: int = 20) -> float:
    """Median wall time of fn(batch) divided by batch, in milliseconds."""
    # A GPU runs kernels asynchronously: wait for them, or only the launch is timed.
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    fn(batch)  # warm-up
    times = []
    for _ in range(repeats):
        sync()
        t = time.perf_counter()
        fn(batch)
        sync()
        times.append(time.perf_counter() - t)
    times.sort()
    return 1000 * times[len(times) // 2] / batch


def latent_bounds(latents: torch.Tensor) -> dict[str, Any]:
    """The card's bounds and step presets from latents (N, *latent_shape)."""
    lo, hi = float(latents.min()), float(latents.max())
    r = hi - lo
    return {
        "latent_bounds": [lo, hi],
        "latent_range": r,
        "step_presets": {"low": r * 1e-4, "high": r * 1e-3},
        "latent_bounds_from": f"{len(latents)} latents",
    }


def as_dataset(dataset: str | Dataset) -> Dataset:
    """The dataset itself, or the registered one of that name."""
    return dataset if isinstance(dataset, Dataset) else get_dataset(dataset)


@torch.inference_mode()
def reference_seeds(
    gen: Generator, dataset: str | Dataset, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The 1,000 latents (fewer when the test split is smaller) and labels the card's
    bounds and viability are measured on."""
    if gen.has_encoder and not gen.conditional:
        test = as_dataset(dataset).load("test")  # only encoders need the images
        n = min(N_LATENTS, len(test))
        z = torch.cat(
            [gen.encode(test.images[i : min(i + 250, n)].to(gen.device)) for i in range(0, n, 250)]
        )
        return z, test.labels[:n]
    rng = torch.Generator().manual_seed(seed)
    return gen.sample_prior(N_LATENTS, rng), torch.arange(N_LATENTS) % gen.num_classes


@torch.inference_mode()
def viability(gen: Generator, z: torch.Tensor, labels: torch.Tensor, clf) -> float:
    """Share of latents z (N, ...) whose decoded image ``clf`` labels as ``labels`` (N,)."""
    correct = 0
    for i in range(0, len(z), 100):
        y = labels[i : i + 100]
        x = gen.decode(z[i : i + 100], y.to(gen.device) if gen.conditional else None)
        correct += int((clf.logits(x).argmax(1).cpu() == y).sum())
    return correct / len(z)


@torch.inference_mode()
def inference_ms(gen: Generator, batches: tuple[int, ...] = (1, 25)) -> dict[str, float]:
    """Milliseconds per decoded image at each batch size (the card's ``inference``)."""
    rng = torch.Generator().manual_seed(0)
    z = gen.sample_prior(max(batches), rng)
    y = (torch.arange(max(batches)) % gen.num_classes).to(gen.device)
    return {
        f"ms_per_image_b{b}": round(
            ms_per_image(lambda n: gen.decode(z[:n], y[:n] if gen.conditional else None), b), 4
        )
        for b in batches
    }


def guidance_defaults(gen: Generator, z: torch.Tensor, labels: torch.Tensor, clf) -> dict:
    """Viability per guidance scale of GUIDANCE_GRID and the seed/search defaults."""
    by_scale = {}
    for g in GUIDANCE_GRID:
        gen.configure(guidance=g, seed_guidance=g)
        by_scale[g] = viability(gen, z, labels, clf)
    best = max(by_scale.values())
    seed = min(g for g, v in by_scale.items() if v == best)
    search = min(g for g, v in by_scale.items() if v >= best - GUIDANCE_TOLERANCE)
    gen.configure(guidance=search, seed_guidance=seed)
    return {
        "viability_by_guidance": {str(g): v for g, v in by_scale.items()},
        "seed_guidance": seed,
        "guidance": search,
        "guidance_rule": f"seeds: highest viability on {list(GUIDANCE_GRID)}; search: "
        f"lowest scale within {GUIDANCE_TOLERANCE:.0%} of it",
    }


def finish_generator_card(
    name: str,
    dataset: str | Dataset,
    classifier: str | None,
    root: Path | None,
    device: str = "cpu",
) -> dict[str, Any]:
    """Measure the stored generator and complete its card; returns the card. `root`: where
    models are looked up (None: the bundled zoo, then the user's). Without a classifier for
    the dataset, viability is left unmeasured (null) and the card says how to measure it."""
    ds = as_dataset(dataset)
    gen = zoo.load_generator(name, device, root=root)
    card = zoo.load_card(name, root)
    folder = zoo.model_folder(name, root)
    z, labels = reference_seeds(gen, ds)
    card.update(latent_bounds(z))
    try:
        clf_name = zoo.resolve("classifier", ds.name, classifier, root)
    except ConfigError:
        if classifier is not None:
            raise
        card.setdefault("metrics", {}).update(
            {
                "viability": None,
                "viability_how": (
                    f"not measured: no classifier for {ds.name}; train one (latentfuzz train "
                    f"classifier --dataset {ds.name}), then run latentfuzz models measure {name}"
                ),
            }
        )
        card["inference"] = inference_ms(gen)
        (folder / zoo.CARD).write_text(json.dumps(card, indent=2) + "\n")
        return card
    clf = zoo.load_classifier(clf_name, ds.name, device, root, str(ds.root))
    if "seed_guidance" in gen.Options.model_fields:
        chosen = guidance_defaults(gen, z, labels, clf)
        card["params"].update(guidance=chosen["guidance"], seed_guidance=chosen["seed_guidance"])
        card.setdefault("metrics", {})["guidance"] = chosen
        card["sampler"] = (
            f"DDIM, eta 0, {gen.steps} steps, classifier-free guidance {gen.seed_guidance} "
            f"for seeds and {gen.guidance} during the search"
        )
    # Measured as a campaign checks a seed: with the seed settings.
    with gen.seeding():
        share = viability(gen, z, labels, clf)
    card.setdefault("metrics", {}).update(
        {
            "viability": share,
            "viability_how": (
                "encoded test images whose reconstruction the classifier labels correctly"
                if gen.has_encoder and not gen.conditional
                else "conditional samples (100 per class) the classifier assigns to "
                "their conditioning label"
            ),
            "viability_classifier": clf_name,
            "viability_seeds": len(z),
        }
    )
    card["inference"] = inference_ms(gen)
    # Where the card was found: a user's (imported) generator is not in the bundled zoo.
    (folder / zoo.CARD).write_text(json.dumps(card, indent=2) + "\n")
    return card
