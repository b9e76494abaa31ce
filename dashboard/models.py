"""The Models page's parts: the zoo as a readable table, each card as formatted facts, sample
images per generator, the files uploaded into this home before uploads became models, and
the forms that add, rename and delete the user's own models.

Issue 11 found raw JSON and `None` cells there, and no uploaded classifiers; issue 36 found
uploads that were files, not models: unmeasured, absent from other pickers, named by path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
from PIL import Image

from dashboard.form_check import in_words
from dashboard.lineage import lineage_facts
from dashboard.uploads import model_name, register_upload

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
        ("added from", str(c.get("imported_from", DASH))),
        ("test accuracy", _num((c.get("metrics") or {}).get("test_accuracy"), ".2%")),
        ("ms per image", _num((c.get("inference") or {}).get("ms_per_image_b1"), ".3f")),
        ("created", str(c.get("created", DASH))),
        ("torch", str(c.get("torch", DASH))),
        ("weights sha256", f"`{c.get('sha256', DASH)}`"),
    ]
    facts += lineage_facts(c)  # a repaired model: its parent, failures used, settings
    # Deferred (start-up time: loads torch, safetensors, pydantic).
    from engine.api import chance_note

    facts.append(("warning", chance_note(c) or DASH))
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


#: What a refusal may name, as these forms label it.
LABELS = {"name": "Name", "dataset": "Dataset", "latent_shape": "Latent shape"}
CLASSIFIER_TYPES = ["pt", "pth", "ts", "onnx"]


def taken(name: str) -> str | None:
    """Why ``name`` cannot be a new model's name (a model has it), or None."""
    # Deferred (start-up time: loads torch, safetensors, pydantic).
    from engine.api import zoo

    if any(c["name"] == name for c in zoo.list_cards()):
        return f"A model named {name} exists already: pick another name."
    return None


def measured(card: dict[str, Any]) -> str:
    """What a new card measured, in one line: test accuracy (or why not) and time."""
    m, inf = card.get("metrics") or {}, card.get("inference") or {}
    if "test_accuracy" in m:
        quality = f"test accuracy {m['test_accuracy']:.2%} on {m['test_images']:,} images"
    elif "viability" in m:
        quality = f"viable seeds {m['viability']:.0%}"
    else:
        quality = m.get("test_accuracy_skipped", "no test accuracy")
    return f"{quality}, {inf.get('ms_per_image_b1', float('nan')):.2f} ms per image"


def add_classifier(where, dataset: str, key: str) -> dict[str, Any] | None:
    """An uploader that makes a TorchScript or ONNX classifier for ``dataset`` a model of
    the home; returns its card once added (None before, or after a refusal it shows)."""
    # Deferred (start-up time: loads torch, safetensors, pydantic).
    from engine.api import LatentfuzzError, classifier_format, import_classifier

    # No form: a form keeps its fields to itself until submitted, and a wrong name was
    # refused only at Add.
    n = st.session_state.get(f"{key}:added", 0)
    up = where.file_uploader(
        "TorchScript (.pt) or ONNX (.onnx) classifier",
        key=f"{key}:file:{n}",
        type=CLASSIFIER_TYPES,
        help="checked, measured (accuracy on the test split, time per image) and added "
        "to your models, as `latentfuzz models import` does; an ONNX file with external "
        "weights needs that command",
    )
    name, wrong = _name_field(where, key, n)
    go = where.button("Add classifier", key=f"{key}:go:{n}", disabled=wrong)
    name = _submitted(where, go, up, name)
    if name is None:
        return None
    try:
        # From the bytes, at once: a text file was refused after 8 s, in PyTorch's words.
        classifier_format(up.getvalue(), up.name)
    except LatentfuzzError as e:
        where.error(str(e))  # one line that names the file
        return None
    try:
        with st.spinner(f"Checking and measuring {up.name}…"):
            card = register_upload(
                up.name,
                up.getvalue(),
                lambda p: import_classifier(p, dataset, name, origin=f"upload {up.name}"),
            )
    except LatentfuzzError as e:
        where.error(f"Cannot add {up.name}: {in_words(str(e), LABELS)}")
        return None
    _empty_form_next_run(key)
    return card


#: The name field's rules, short enough for its placeholder (its help has them whole).
NAME_PLACEHOLDER = "letters, digits, . _ - (empty: the file's name)"


def _name_field(where, key: str, n: int) -> tuple[str, bool]:
    """The model name typed (stripped) and whether it is refused: the reason is shown
    under the field as soon as it is typed, and Add stays off until it is fixed."""
    # Deferred (start-up time: loads torch, safetensors, pydantic).
    from engine.api import NAME_RULES, name_problem

    typed = where.text_input(
        "Name",
        placeholder=NAME_PLACEHOLDER,
        key=f"{key}:name:{n}",
        help=f"how pickers and the command line name the model: {NAME_RULES}. Left "
        "empty, the file's name",
    ).strip()
    why = name_problem(typed) if typed else None
    if why:
        where.error(why)
    return typed, why is not None


def _submitted(where, go: bool, up: Any, name: str) -> str | None:
    """The model's name once Add was clicked with a file and a free name; else None, with
    the reason shown where the form is."""
    # Deferred (start-up time: loads torch, safetensors, pydantic).
    from engine.api import name_problem

    if not go or up is None:
        if go:
            where.error("Choose a file to upload first.")
        return None
    name = name or model_name(up.name)
    if why := name_problem(name):  # the file's name, as the field's was checked already
        where.error(why)
        return None
    return name


def _empty_form_next_run(key: str) -> None:
    """New keys for the form's widgets: the added file stayed in the uploader, and a
    second click said its name was taken, as if the first had failed. (A refusal keeps
    them, to fix the name and try again.)"""
    st.session_state[f"{key}:added"] = st.session_state.get(f"{key}:added", 0) + 1


def add_generator(where, dataset: str, classes: int, key: str) -> dict[str, Any] | None:
    """An uploader that makes a TorchScript decoder for ``dataset`` a generator of the
    home (latent bounds, viability and time measured); its card once added, else None."""
    n = st.session_state.get(f"{key}:added", 0)
    up = where.file_uploader(
        "TorchScript (.pt) decoder: latents to images", type=["pt", "ts"], key=f"{key}:file:{n}"
    )
    a, b, c = where.columns(3)
    shape = a.text_input("Latent shape", "100", help="one latent, e.g. 100 or 4,8,8")
    low_high = b.text_input("Output range", "0,1", help="-1,1 for a tanh output")
    conditional = c.checkbox("Takes a class label", help="decoder(latents, labels)")
    name, wrong = _name_field(where, key, n)
    go = where.button("Add generator", key=f"{key}:go:{n}", disabled=wrong)
    name = _submitted(where, go, up, name)
    if name is None:
        return None
    # Deferred (start-up time: loads torch, safetensors, pydantic).
    from engine.api import LatentfuzzError, import_generator, parse_floats, parse_latent_shape

    try:
        sizes = parse_latent_shape(shape)
        lo, hi = parse_floats(low_high, "Output range", 2)
        with st.spinner(f"Checking and measuring {up.name}…"):
            card = register_upload(
                up.name,
                up.getvalue(),
                lambda p: import_generator(
                    p,
                    dataset,
                    sizes,
                    classes,
                    conditional,
                    (lo, hi),
                    name,
                    origin=f"upload {up.name}",
                ),
            )
    except LatentfuzzError as e:
        where.error(f"Cannot add {up.name}: {in_words(str(e), LABELS)}")
        return None
    _empty_form_next_run(key)
    return card


def manage(where, name: str) -> None:
    """Rename and delete the user's model ``name``; each says what it did on the next run
    (a flash in session state) or why it cannot. A model that campaigns use keeps its
    name (they record it): both are disabled, and the caption says why, before a click."""
    # Deferred (start-up time: loads torch, safetensors, pydantic).
    from engine.api import LatentfuzzError, delete_model, rename_model, used_by

    using = used_by(name)
    if using:
        where.caption(in_use(using))
    a, b, c = where.columns([4, 1, 1], vertical_alignment="bottom")
    new = a.text_input("New name", value=name, key=f"rename-{name}", disabled=bool(using))
    if b.button("Rename", key=f"do-rename-{name}", disabled=bool(using)) and new.strip() != name:
        new = new.strip()
        if why := taken(new):
            where.error(why)
            return
        try:
            rename_model(name, new)
        except LatentfuzzError as e:
            where.error(in_words(str(e), LABELS))  # it names the model and what to do
            return
        st.session_state["models_flash"] = f"Renamed {name} to {new}."
        st.rerun()
    if c.button("Delete", key=f"delete-{name}", help="its card and files go", disabled=bool(using)):
        try:
            delete_model(name)
        except LatentfuzzError as e:  # a campaign started since this page was drawn
            where.error(in_words(str(e), LABELS))
            return
        st.session_state["models_flash"] = f"Deleted {name} and its files."
        st.rerun()


def in_use(using: list[dict[str, Any]]) -> str:
    """Why a model cannot be renamed or deleted, plainly: "1 campaign uses it: walk nsga.
    Delete that campaign first, or keep the model." (campaigns record the model's name)."""
    shown = ", ".join(str(c["name"] or c["id"]) for c in using[:3])
    more = f" and {len(using) - 3} more" if len(using) > 3 else ""
    if len(using) == 1:
        return f"1 campaign uses it: {shown}. Delete that campaign first, or keep the model."
    return (
        f"{len(using)} campaigns use it: {shown}{more}. Delete those campaigns first, or "
        "keep the model."
    )
