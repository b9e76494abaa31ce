"""Write a repaired model (or a control) as a carded zoo model with its lineage.

The card is a zoo classifier card (engine/models/zoo.py): the parent's architecture and
params, the weights' hash, test accuracy. It adds ``lineage``: the parent and its
weights' hash, which arm it is, the failures used (source, filters, count, a hash of
their references), the settings and the seed. Models are written to a staging folder
and moved into the home's models only once all are written, so that a run stopped or
refused halfway leaves none behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from torch import nn

from engine.core.errors import ConfigError
from engine.models import zoo
from engine.models.provenance import command_line, stamp

#: The report written beside the repaired model's card.
REPORT = "repair.json"


def names(name: str, controls: bool) -> dict[str, str]:
    """arm -> model name: the repair keeps ``name``, controls add their arm's name."""
    out = {"repair": name}
    if controls:
        out |= {"random": f"{name}-random", "no-validity": f"{name}-no-validity"}
    return out


def check_free(model_names: list[str]) -> None:
    """A one-line error when a name is taken (bundled, or in the home's models)."""
    for n in model_names:
        if zoo.is_bundled(n) or (zoo.user_models_dir() / n).exists():
            raise ConfigError(
                f"model name {n!r} is taken ({zoo.model_folder(n)}); pick another --name, "
                "or remove that model first"
            )


def refs_hash(refs: tuple[str, ...]) -> str:
    """A short hash naming exactly which failures were used."""
    return hashlib.sha256("\n".join(refs).encode()).hexdigest()[:16]


def card_for(
    parent: dict[str, Any],
    name: str,
    arm: str,
    lineage: dict[str, Any],
    training: dict[str, Any],
    module: nn.Module,
) -> dict[str, Any]:
    """A zoo classifier card of the parent's architecture, with its lineage."""
    keep = ("architecture", "dataset", "params", "image_shape", "dataset_fingerprint")
    return {
        "name": name,
        "kind": "classifier",
        **{k: parent[k] for k in keep if k in parent},
        "default": False,
        "parameters": sum(p.numel() for p in module.parameters()),
        "training": {"command": command_line(), **training},
        "lineage": {"parent": parent["name"], "parent_sha256": parent.get("sha256"), "arm": arm}
        | lineage,
        **stamp(),
    }


def stage(staging: Path, module: nn.Module, card: dict[str, Any], fp16: bool) -> Path:
    """Write weights and card under ``staging``; returns the model's folder there."""
    return zoo.save_model(module, card, staging, fp16=fp16)


def set_metrics(folder: Path, metrics: dict[str, Any]) -> None:
    """Add the measured metrics to a written card."""
    card = json.loads((folder / zoo.CARD).read_text())
    card["metrics"] = metrics
    (folder / zoo.CARD).write_text(json.dumps(card, indent=2) + "\n")


def staging_folder(name: str) -> Path:
    """This run's staging folder, after removing those of runs killed before their
    cleanup (a SIGKILL): hidden, and one level deeper than a model's card, so that the
    zoo never lists what is staged."""
    root = zoo.user_models_dir()
    for old in root.glob(".repair-*"):
        pid = old.name.split("-")[1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    return root / f".repair-{os.getpid()}-{name}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def publish(staging: Path, model_names: list[str]) -> None:
    """Move the staged models into the home's models, then drop the staging folder."""
    dest = zoo.user_models_dir()
    dest.mkdir(parents=True, exist_ok=True)
    for n in model_names:
        (staging / n).rename(dest / n)
    shutil.rmtree(staging, ignore_errors=True)


def write_report(name: str, report: dict[str, Any]) -> Path:
    """The report as JSON beside the repaired model's card."""
    path = zoo.user_models_dir() / name / REPORT
    path.write_text(json.dumps(report, indent=2) + "\n")
    return path
