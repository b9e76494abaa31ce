"""The Models page's parts: the zoo as a readable table, each card as formatted facts, sample
images per generator, and the classifiers uploaded into this home.

Issue 11 found raw JSON and `None` cells there, and no uploaded classifiers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
from PIL import Image

DASH = "–"


def _num(v: Any, spec: str) -> str:
    return DASH if v is None or (isinstance(v, float) and np.isnan(v)) else format(v, spec)


def zoo_table(cards: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per model, every cell text ("–" where a figure does not apply); source says
    whether it is the bundled zoo's or the user's ($LATENTFUZZ_HOME/models)."""
    # Deferred (start-up time: loads torch, safetensors, pydantic).
    from engine.api import zoo

    rows = []
    for c in cards:
        m, inf = c.get("metrics") or {}, c.get("inference") or {}
        latent = int(np.prod(c["latent_shape"])) if c.get("latent_shape") else None
        rows.append(
            {
                "name": c["name"],
                "source": "bundled" if zoo.is_bundled(c["name"]) else "yours",
                "kind": c["kind"],
                "dataset": c["dataset"],
                "family": c.get("family") or c.get("architecture") or DASH,
                "default": "yes" if c.get("default") else "",
                "latent size": _num(latent, ","),
                "parameters": _num(c.get("parameters"), ","),
                "test accuracy": _num(m.get("test_accuracy"), ".2%"),
                "viable seeds": _num(m.get("viability"), ".0%"),
                "ms/image (1)": _num(inf.get("ms_per_image_b1"), ".2f"),
                "ms/image (25)": _num(inf.get("ms_per_image_b25"), ".3f"),
            }
        )
    return pd.DataFrame(rows)


def card_facts(c: dict[str, Any]) -> list[tuple[str, str]]:
    """A card as (label, value) lines, in the order a reader asks for them."""
    t = c.get("training") or {}
    facts = [
        ("trained with", f"`{t.get('command', DASH)}`"),
        (
            "training",
            ", ".join(f"{k} {t[k]}" for k in ("epochs", "batch_size", "lr", "seed") if k in t)
            or DASH,
        ),
        ("training data", str(t.get("split", DASH))),
        (
            "data fingerprint",
            f"`{c['dataset_fingerprint']}`" if "dataset_fingerprint" in c else DASH,
        ),
        ("training time", _num(t.get("seconds"), ".0f") + " s"),
        ("sampler", str(c.get("sampler", DASH))),
        ("latent bounds", ", ".join(f"{b:.2f}" for b in c.get("latent_bounds") or []) or DASH),
        ("created", str(c.get("created", DASH))),
        ("torch", str(c.get("torch", DASH))),
        ("weights sha256", f"`{c.get('sha256', DASH)}`"),
    ]
    return [(k, v) for k, v in facts if v not in (DASH, f"{DASH} s", "`–`")]


@st.cache_data(show_spinner="Drawing samples…")
def samples(name: str, per_class: int = 1, seed: int = 0) -> list[np.ndarray]:
    """Images (H, W[, C]) decoded from prior latents: one per class for a conditional
    generator, else ten; fixed seed, so the page shows the same samples each time."""
    # Deferred (start-up time: loads torch).
    import torch

    # Deferred (start-up time: loads torch, safetensors, pydantic).
    from engine.api import zoo

    gen = zoo.load_generator(name)
    rng = torch.Generator().manual_seed(seed)
    n = gen.num_classes * per_class if gen.conditional else 10
    labels = torch.arange(n) % gen.num_classes if gen.conditional else None
    x = gen.decode(gen.sample_prior(n, rng), labels).cpu().numpy()
    return [np.squeeze(np.moveaxis(img, 0, -1)) for img in x]


def show_samples(name: str) -> None:
    try:
        imgs = samples(name)
    except Exception as e:  # noqa: BLE001 - a broken card must not take the page down
        st.caption(f"No samples: {e}")
        return
    big = [Image.fromarray((255 * i).astype("uint8")).resize((84, 84), Image.NEAREST) for i in imgs]
    st.image(big, width=84)


def uploaded(home: Path) -> pd.DataFrame:
    """Classifiers uploaded on the New campaign page (home/uploads), newest first."""
    folder = home / "uploads"
    files = (
        sorted(folder.glob("*"), key=lambda p: p.stat().st_mtime, reverse=True)
        if folder.is_dir()
        else []
    )
    return pd.DataFrame(
        {
            "file": [p.name.split("-", 1)[-1] for p in files],
            "stored as": [str(p.relative_to(home)) for p in files],
            "size": [f"{p.stat().st_size / 1e6:.1f} MB" for p in files],
            "uploaded": [
                pd.Timestamp(p.stat().st_mtime, unit="s").strftime("%Y-%m-%d %H:%M") for p in files
            ],
        }
    )
