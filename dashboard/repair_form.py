"""The Repair section's settings (dashboard/repair.py): the validity filter with its
default, calibrated or own threshold, the classifier and the name, the training, and the
size of the new campaigns, each refused as it is chosen.

The checks are the command's own (engine/repair/settings.py, one field at a time), in the
form's words, so the form can neither allow what the process then refuses nor refuse what
it accepts; the choices become the command's arguments exactly as a person would type
them (a calibrated threshold as NAME=calibrated:STUDY), so the lineage records them as
the CLI does.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.form_check import in_words as form_words
from engine.api import (
    VALIDATORS,
    ConfigError,
    LatentfuzzError,
    RepairSettings,
    study_calibration,
)
from store import Store
from store import calibration as scal

#: The form's labels of the command's options, for its refusals and the process's.
LABELS = {
    "validator": "Validity filter",
    "name": "Name of the repaired model",
    "replay": "Training images per failure",
    "epochs": "Epochs",
    "lr": "Learning rate",
    "batch_size": "Batch size",
    "seed": "Random seed",
    "fresh_seeds": "Seeds of the new campaigns",
    "fresh_generations": "Generations of the new campaigns",
}
CALIBRATED = "calibrated:"


def in_words(line: str) -> str:
    """The command's one-line refusal in the form's words (form_check.in_words), less
    what only a command line has: the `error:` prefix, the source it names (the section
    is that source) and asides of syntax or commands."""
    line = re.sub(r"^error:\s*", "", line)
    line = re.sub(r"^--from-(campaign|study) \S+: ", "", line)
    line = re.sub(r"\s*\((?:NAME=THRESHOLD|`latentfuzz [^`]*`)\)", "", line)
    return form_words(line.replace("the validator", "the validity filter"), LABELS)


# The bootstrap of a calibration takes a moment: computed once per state of the study
# (its scores, answers and adjudications), not on every rerun of the page.
@st.cache_data(ttl=3600, show_spinner=False, max_entries=256)
def _calibrated(
    _store: Store, db: str, sid: str, validators: tuple[str, ...], state: tuple
) -> dict[str, tuple[float, float]]:
    calibs = study_calibration.calibrations(_store, sid, list(validators))
    return {
        name: (float(c.threshold), float(c.auc))
        for (name, verdict), c in calibs.items()
        if verdict == "validity" and not isinstance(c, str)
    }


def calibrated_thresholds(store: Store, dataset: str) -> dict[str, list[tuple[str, str]]]:
    """validator -> [(study id, "NAME: T, calibrated on STUDY (AUC A)")] of each validity
    study of `dataset` it was calibrated on (`labels calibrate`, or the studies page),
    newest study first; a study whose verdicts cannot calibrate it is left out."""
    scored = scal.scored_studies(store, dataset)
    out: dict[str, list[tuple[str, str]]] = {}
    for sid, part in scored.groupby("study_id", sort=False):
        state = (
            str(part["scored_at"].max()),
            int(part["answers"].iloc[0]),
            int(part["adjudications"].iloc[0]),
        )
        names = tuple(part["validator"])
        try:
            fitted = _calibrated(store, str(store.path), str(sid), names, state)
        except LatentfuzzError:  # a study that cannot be read: its thresholds are not offered
            continue
        study = part["name"].iloc[0] if pd.notna(part["name"].iloc[0]) else sid
        for name, (t, auc) in fitted.items():
            words = f"{name}: {t:.3g}, calibrated on {study} (AUC {auc:.2f})"
            out.setdefault(name, []).append((str(sid), words))
    return out


def default_words(name: str) -> str:
    t = VALIDATORS.get(name).default_threshold
    if math.isnan(t):  # fitted on real images when the filter runs
        return f"{name}: the filter's default, measured on real images"
    return f"{name}: {t:g}, the filter's default"


def validator_choice(store: Store, key: str, dataset: str, prefer: tuple[str, ...]) -> str:
    """The filter and its threshold, as the command's --validator value: NAME (its
    default), NAME=calibrated:STUDY or NAME=THRESHOLD."""
    first = [n for n in (*prefer, "ssim-nearest") if n in VALIDATORS]
    names = list(dict.fromkeys([*first, *VALIDATORS.names()]))
    a, b = st.columns([1, 3])  # room for "NAME: T, calibrated on STUDY (AUC A)"
    name = a.selectbox(LABELS["validator"], names, key=f"repair-validator-{key}")
    # The words are the options: AppTest and people pick by what they read.
    own = "a value of your own"
    options = {default_words(name): name}
    for sid, words in calibrated_thresholds(store, dataset).get(name, []):
        options[words if words not in options else f"{words}, study {sid}"] = (
            f"{name}={CALIBRATED}{sid}"
        )
    options[own] = ""
    choice = b.selectbox(
        "Its threshold",
        list(options),
        key=f"repair-threshold-{key}-{name}",
        help="a validity study's people judged the images; `labels calibrate` (or the "
        "study's Calibration tab) fits the threshold that agrees with them best",
    )
    if choice != own:
        return options[choice]
    cls = VALIDATORS.get(name)
    lo, hi = cls.score_range
    t = st.columns(4)[0].number_input(
        "Threshold",
        value=float(lo if math.isnan(cls.default_threshold) else cls.default_threshold),
        step=0.01,
        key=f"repair-own-{key}-{name}",
        help=f"an image passes when its score reaches it; scores lie in {lo:g} to {hi:g}",
    )
    return f"{name}={t!r}"


def _check(field: str, value: Any) -> str | None:
    """The command's refusal of this one setting, in the form's words; None: accepted."""
    try:
        RepairSettings(classifier="-", campaign="-", validators={"-": None}, **{field: value})
    except ConfigError as e:
        return in_words(str(e)).rstrip(".") + "."
    return None


def problems(values: dict[str, Any]) -> list[str]:
    """Every setting the command would refuse, one sentence each; [] when none."""
    said = (_check(f, values[f]) for f in LABELS if f in values and f not in ("name",))
    return [s for s in said if s]


def training(key: str) -> dict[str, Any]:
    """The fine-tuning's settings, with the command's defaults."""
    c = st.columns(5)
    return {
        "replay": c[0].number_input(
            LABELS["replay"],
            value=10.0,
            step=1.0,
            key=f"repair-replay-{key}",
            help="real training images mixed in beside each failure, so the classifier "
            "keeps what it knew (0 to 1000)",
        ),
        "epochs": c[1].number_input(
            LABELS["epochs"], value=5, step=1, key=f"repair-epochs-{key}", help="1 to 1000"
        ),
        "lr": c[2].number_input(
            LABELS["lr"],
            value=5e-4,
            step=1e-4,
            format="%.5f",
            key=f"repair-lr-{key}",
            help="AdamW at a constant rate; above 0, at most 1",
        ),
        "batch_size": c[3].number_input(
            LABELS["batch_size"],
            value=64,
            step=1,
            key=f"repair-batch-{key}",
            help="images per optimisation step (2 to 100,000)",
        ),
        "seed": c[4].number_input(
            LABELS["seed"],
            value=0,
            step=1,
            key=f"repair-seed-{key}",
            help="seeds every draw of the training mix and the training",
        ),
    }


def fresh(key: str, template: dict[str, Any] | None) -> dict[str, Any]:
    """The new campaigns' size, the source campaign's by default (the command's); {}
    when there is no source campaign to repeat."""
    if template is None:
        st.caption(
            "No new campaign measures the models: the failures come from no campaign to "
            "repeat (an imported study)."
        )
        return {}
    params = template.get("strategy_params") or {}
    st.caption(
        "Then the classifier, the repaired model and both controls each search a new "
        "campaign like the one the failures came from, with another random seed: four "
        "campaigns of this size."
    )
    a, b = st.columns(2)
    out = {
        "fresh_seeds": a.number_input(
            LABELS["fresh_seeds"],
            value=int(template.get("seeds") or 0),
            step=1,
            key=f"repair-fresh-seeds-{key}",
            help="0: no new campaign (0 to 100,000; by default, the seeds of the campaign the "
            "failures came from)",
        )
    }
    if params.get("generations") is not None:
        out["fresh_generations"] = b.number_input(
            LABELS["fresh_generations"],
            value=int(params["generations"]),
            step=1,
            key=f"repair-fresh-generations-{key}",
            help="their generation budget (1 to 100,000; by default, that campaign's)",
        )
    return out


def arguments(values: dict[str, Any], template: dict[str, Any] | None) -> list[str]:
    """The command's options for these settings; the new campaigns' size only where it
    differs from the source campaign's (the command's default), as a person would type."""
    args = ["--classifier", values["classifier"]]
    args += [
        f"--{k.replace('_', '-')}={values[k]}" for k in ("replay", "epochs", "lr", "batch_size")
    ]
    args.append(f"--seed={values['seed']}")
    source = {
        "fresh_seeds": (template or {}).get("seeds"),
        "fresh_generations": ((template or {}).get("strategy_params") or {}).get("generations"),
    }
    args += [
        f"--{k.replace('_', '-')}={values[k]}"
        for k in source
        if k in values and values[k] != source[k]
    ]
    return args
