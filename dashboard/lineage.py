"""Where a repaired model came from, read from its card's lineage (engine/repair/model.py):
the note on Compare and the lines of its card on Models."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.text import md_text
from engine.api import LatentfuzzError, zoo

#: A control's arm in words (the repair itself is "a repair").
ARMS = {"random": "the Random control", "no-validity": "the No-validity control"}


def lineage(name: str) -> dict[str, Any] | None:
    """Model `name`'s lineage, or None (no such model, or not a repair)."""
    try:
        card = zoo.load_card(name)
    # No card: a campaign's classifier given as a file, or a model deleted since.
    except (LatentfuzzError, OSError, ValueError):
        return None
    lin = card.get("lineage")
    return lin if isinstance(lin, dict) and lin.get("parent") else None


def source_words(lin: dict[str, Any]) -> str:
    """ "12 failures from campaign C" (or from study S)."""
    f = lin.get("failures") or {}
    where = f"campaign {f['campaign']}" if f.get("campaign") else f"study {f.get('study', '?')}"
    return f"{f.get('used', '?')} failures from {where}"


def filter_words(lin: dict[str, Any]) -> str:
    """ "ssim-nearest 0.454, calibrated on study S": the validity filters that passed the
    failures, at their thresholds (plain text; "" for a study's, which people judged)."""
    f = lin.get("failures") or {}
    studies = f.get("calibrated_on") or {}
    return "; ".join(
        f"{k} {'default' if v is None else f'{v:.3g}'}"
        + (f", calibrated on study {studies[k]}" if k in studies else "")
        for k, v in (f.get("validators") or {}).items()
    )


def repair_note(child: str, parent: str, lin: dict[str, Any]) -> str:
    """ "CHILD is a repair of PARENT (N failures from campaign C)", in markdown."""
    what = ARMS.get(lin.get("arm", "repair"), "a repair")
    if what != "a repair":
        what += " of a repair"
    return f"{md_text(child)} is {what} of {md_text(parent)} ({md_text(source_words(lin))})"


def parent_first(ids: list[str], classifier: dict[str, str]) -> list[str]:
    """Compare's campaigns with, where one's classifier was repaired into another's, a note
    saying so and the parent's campaigns placed first."""
    names = {classifier.get(i) for i in ids} - {None}
    parents: set[str] = set()
    for child in sorted(names):
        lin = lineage(child)
        if lin is not None and lin["parent"] in names:
            st.info(repair_note(child, lin["parent"], lin))
            parents.add(lin["parent"])
    if not parents:
        return ids
    return sorted(ids, key=lambda i: classifier.get(i) not in parents)  # stable otherwise


def lineage_facts(card: dict[str, Any]) -> list[tuple[str, str]]:
    """A repaired model's card lines: its parent, the failures used, the settings."""
    lin = card.get("lineage")
    if not isinstance(lin, dict) or not lin.get("parent"):
        return []
    s = lin.get("settings") or {}
    filters = filter_words(lin)
    settings = ", ".join(
        f"{label} {s[k]}"
        for k, label in (
            ("replay_per_failure", "training images per failure"),
            ("epochs", "epochs"),
            ("lr", "learning rate"),
            ("batch_size", "batch size"),
        )
        if k in s
    )
    return [
        ("repair of", f"{md_text(lin['parent'])} ({ARMS.get(lin.get('arm'), 'the repair')})"),
        (
            "failures used",
            md_text(source_words(lin) + (f", validity filter {filters}" if filters else "")),
        ),
        ("repair settings", f"{settings}, random seed {lin.get('seed', '?')}"),
    ]
