"""Validity studies: which images people judge (engine/labelling/statistics.py says what
their judgements add up to).

A study is built from campaigns (the result images of failing seeds by default, optionally
their seed images, plus gold items: real test images with known labels) or imported from
an external study (engine/labelling/importing.py). Verdicts follow the ICST rules by default
(engine/labelling/agreement.py, which applies them per item); an adjudication, when present,
settles an item instead.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field, model_validator

from engine.core.errors import ConfigError
from engine.core.ids import timestamped_id
from engine.core.images import to_pil, to_uint8
from engine.datasets import get_dataset
from engine.labelling.agreement import INVALID, OTHER, UNSURE
from store import Store
from store import campaigns as sc
from store import differential as sd
from store import labels as label_store


class StudyConfig(BaseModel, frozen=True):
    """What a study shows and how its judgements are combined."""

    campaigns: list[str] = Field(min_length=1)
    name: str | None = Field(None, max_length=200)
    k: int = Field(2, ge=1, le=20, description="answers wanted per image")
    rule: Literal["icst", "majority"] = "icst"  # pydantic then says the choices in words
    sample: int | None = Field(None, ge=1, description="result images drawn; None: all")
    seed_images: bool = False
    triggering: bool = Field(
        False,
        description="label the campaigns' archived triggering inputs (differential "
        "campaigns: images two classifiers label differently) instead of failing seeds",
    )
    gold_rate: float = Field(0.1, ge=0, lt=1, description="share of gold items in the study")
    # At most what a browser's number field holds (2^53 - 1): the page and the CLI then
    # accept the same seeds; the store's BIGINT refused larger ones with a traceback.
    seed: int = Field(0, ge=0, le=2**53 - 1)
    resamples: int = Field(1000, ge=100, le=100_000)

    @model_validator(mode="after")
    def _rule_fits_k(self) -> StudyConfig:
        if self.rule == "majority" and self.k < 3:
            raise ValueError(f"majority vote needs k >= 3 answers per image, got k={self.k}")
        if self.triggering and self.seed_images:
            # It was dropped without a word: triggering inputs have no seed image beside.
            raise ValueError(
                "seed_images (--seed-images) shows the seed beside each failing seed's "
                "result; a study of triggering inputs (--triggering) has none: drop one"
            )
        return self


def new_study_id() -> str:
    return timestamped_id("study-")


def failing_seeds(store: Store, campaign_ids: list[str]) -> pd.DataFrame:
    """Misclassified seeds with a result image, over the campaigns: the population a study
    samples from (its size feeds the sample-size planner). Two queries whatever the number
    of campaigns (one per campaign took 7.9 s over 175 campaigns)."""
    if not campaign_ids:
        return pd.DataFrame()
    c = sc.campaigns_by_id(store, campaign_ids)
    missing = [cid for cid in campaign_ids if cid not in set(c["id"])]
    if missing:
        raise ConfigError(f"no campaign {missing[0]!r}; `latentfuzz campaigns` lists them")
    s = sc.seeds_of(store, campaign_ids, "misclassified AND result_image IS NOT NULL")
    meta = c[["id", "generator", "preset", "dataset"]].rename(columns={"id": "campaign_id"})
    out = s.merge(meta, on="campaign_id", how="left")
    # The per-seed columns first, as the one-campaign-at-a-time version returned them.
    return out[
        [
            *[x for x in s.columns if x != "campaign_id"],
            "campaign_id",
            "generator",
            "preset",
            "dataset",
        ]
    ]


def triggering_inputs(store: Store, campaign_ids: list[str]) -> pd.DataFrame:
    """The archived triggering inputs of differential campaigns: the population a
    differential study samples from."""

    df = sd.triggering(store, campaign_ids)
    missing = sorted(set(campaign_ids) - set(sc.campaigns_by_id(store, campaign_ids)["id"]))
    if missing:
        raise ConfigError(f"no campaign {missing[0]!r}; `latentfuzz campaigns` lists them")
    return df


def _triggering_rows(pool: pd.DataFrame) -> list[dict]:
    return [
        {
            "kind": "triggering",
            "campaign_id": r.campaign_id,
            "seed_idx": r.seed_idx,
            "generator": r.generator,
            "preset": r.preset,
            "image": r.image,
            "expected": r.label,
            "predicted": r.pred,
            "predicted_b": int(r.pred_b),
            "iterations": r.generation,
            "external_id": f"archive:{r.entry}",
        }
        for r in pool.itertuples()
    ]


#: Campaigns a refusal names one by one; more are counted.
NAMED = 3


def _named(camps: pd.DataFrame, ids: list[str]) -> str:
    """Campaigns as a refusal names them, "walk nsga (20261127-121143-7c91)" (a refusal
    printed the Python list "['20261127-121143-7c91']"), the id alone where the name is it."""
    names = dict(zip(camps["id"], camps["name"], strict=True))

    def one(cid: str) -> str:
        name = names.get(cid)
        if not isinstance(name, str) or not name or name == cid:
            return cid
        return f"{name if len(name) <= 60 else name[:60] + '…'} ({cid})"

    shown = [one(c) for c in ids[:NAMED]]
    more = len(ids) - NAMED
    if more > 0:
        return ", ".join(shown) + f" and {more} more"
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _campaigns(camps: pd.DataFrame, ids: list[str]) -> str:
    return ("campaign " if len(ids) == 1 else "campaigns ") + _named(camps, ids)


def create_study(store: Store, home: Path, cfg: StudyConfig) -> str:
    """Draw the study's images, write its gold images and store it; returns its id."""
    camps = sc.campaigns_by_id(store, cfg.campaigns)
    if not cfg.triggering:
        if two := camps.loc[camps["classifier_b"].notna(), "id"].tolist():
            # Their "misclassified" seeds are the inputs A and B label differently, often
            # with A right: a misclassification study of them measured non-failures.
            each = len(two) == 1
            raise ConfigError(
                f"{_campaigns(camps, two)} {'tests' if each else 'test'} two classifiers "
                f"against each other: {'its' if each else 'their'} failing seeds are inputs "
                "the two label differently, not misclassifications; label the inputs they "
                "disagree on instead (--triggering)"
            )
    elif one := camps.loc[camps["classifier_b"].isna(), "id"].tolist():
        # They were left out without a word: one classifier archives no disagreements.
        each = len(one) == 1
        raise ConfigError(
            f"{_campaigns(camps, one)} {'tests' if each else 'test'} one classifier: "
            f"{'it archives' if each else 'they archive'} no inputs two classifiers "
            f"disagree on; leave {'it' if each else 'them'} out, or label "
            f"{'its' if each else 'their'} failing seeds in a study of their own (without "
            "--triggering)"
        )
    pool = (triggering_inputs if cfg.triggering else failing_seeds)(store, cfg.campaigns)
    if pool.empty and cfg.triggering:
        raise ConfigError(
            f"{_campaigns(camps, cfg.campaigns)}: no archived triggering input, nothing to "
            "label. Run a differential campaign (a second classifier) first."
        )
    if pool.empty:
        raise ConfigError(
            f"{_campaigns(camps, cfg.campaigns)}: no misclassified seed with a result image, "
            "nothing to label. Run a campaign that finds failures first."
        )
    datasets = set(pool["dataset"])
    if len(datasets) > 1:
        raise ConfigError(
            "a study shows images of one dataset; these campaigns use "
            f"{', '.join(sorted(datasets))}. Create one study per dataset."
        )
    rng = np.random.default_rng(cfg.seed)
    if cfg.sample is not None and cfg.sample < len(pool):
        pool = pool.iloc[np.sort(rng.choice(len(pool), cfg.sample, replace=False))]
    dataset = get_dataset(datasets.pop())
    rows = _triggering_rows(pool) if cfg.triggering else []
    for kind in () if cfg.triggering else ("result", "seed") if cfg.seed_images else ("result",):
        for r in pool.itertuples():
            rows.append(
                {
                    "kind": kind,
                    "campaign_id": r.campaign_id,
                    "seed_idx": r.seed_idx,
                    "generator": r.generator,
                    "preset": r.preset,
                    "image": r.result_image if kind == "result" else r.seed_image,
                    "expected": r.seed_label,
                    "predicted": r.final_pred if kind == "result" else r.seed_pred,
                    "iterations": r.iterations if kind == "result" else 0,
                }
            )
    sid = new_study_id()
    n_gold = round(len(rows) * cfg.gold_rate / (1 - cfg.gold_rate))
    if n_gold:
        test = dataset.load("test")
        picks = rng.choice(len(test), min(n_gold, len(test)), replace=False)
        folder = home / "studies" / sid
        folder.mkdir(parents=True, exist_ok=True)
        images = to_uint8(test.images[picks]).numpy()
        for idx, img in zip(picks, images, strict=True):
            rel = f"studies/{sid}/gold-{int(idx):05d}.png"
            to_pil(img).save(home / rel)
            rows.append(
                {
                    "kind": "gold",
                    "image": rel,
                    "expected": int(test.labels[idx]),
                    "external_id": f"test:{int(idx)}",
                }
            )
    items = pd.DataFrame(rows).assign(item_id=lambda d: np.arange(len(d)))
    study = {
        "id": sid,
        "name": cfg.name or sid,
        "dataset": dataset.name,
        "source": "campaigns",
        "k": cfg.k,
        "rule": cfg.rule,
        "seed": cfg.seed,
        "resamples": cfg.resamples,
        "config": cfg.model_dump(),
    }
    try:
        label_store.create_validity_study(store, study, items)
    except BaseException:
        # Gold images of a study the store refused belong to nothing (doctor misses them).
        shutil.rmtree(home / "studies" / sid, ignore_errors=True)
        raise
    return sid


# ----------------------------------------------------------------------------- verdicts


# ------------------------------------------------------------------------------ export


def answer_text(answer: int, class_names: tuple[str, ...], domain: str) -> str:
    if answer == INVALID:
        return f"not a valid {domain} image"
    if answer == OTHER:
        return f"a different {domain}"
    if answer == UNSURE:
        return "unsure"
    return class_names[answer]


def marker_choices(ds, unsure: bool = True) -> list[tuple[str, str, int, str]]:
    """The answers besides the classes, as (name, text, value, key): invalid, "a different
    <domain>" where the classes are a subset of the domain, and unsure."""
    out = [("invalid", INVALID, "X")]
    if ds.open_world():
        out.append(("other", OTHER, "O"))
    if unsure:
        out.append(("unsure", UNSURE, "U"))
    return [(n, answer_text(v, ds.class_names, ds.domain), v, k) for n, v, k in out]
