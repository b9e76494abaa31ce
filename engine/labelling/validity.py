"""Validity studies: which images people judge, and what their judgements add up to.

A study is built from campaigns (the result images of failing seeds by default, optionally
their seed images, plus gold items: real test images with known labels) or imported from
an external study (engine/labelling/importing.py). Verdicts follow the ICST rules by default
(engine/labelling/agreement.py, which applies them per item); an adjudication, when present,
settles an item instead.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field, model_validator

from engine.core.errors import ConfigError
from engine.core.ids import timestamped_id
from engine.core.images import to_pil, to_uint8
from engine.datasets import get_dataset
from engine.labelling import agreement
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
        False, description="label the campaigns' archived triggering inputs (differential "
        "campaigns: images two classifiers label differently) instead of failing seeds",
    )  # fmt: skip
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
    return out[[*[x for x in s.columns if x != "campaign_id"], "campaign_id", "generator",
                "preset", "dataset"]]  # fmt: skip


def triggering_inputs(store: Store, campaign_ids: list[str]) -> pd.DataFrame:
    """The archived triggering inputs of differential campaigns: the population a
    differential study samples from."""

    df = sd.triggering(store, campaign_ids)
    missing = sorted(set(campaign_ids) - set(sc.campaigns_by_id(store, campaign_ids)["id"]))
    if missing:
        raise ConfigError(f"no campaign {missing[0]!r}; `latentfuzz campaigns` lists them")
    return df


def _triggering_rows(pool: pd.DataFrame) -> list[dict]:
    return [{
        "kind": "triggering", "campaign_id": r.campaign_id, "seed_idx": r.seed_idx,
        "generator": r.generator, "preset": r.preset, "image": r.image, "expected": r.label,
        "predicted": r.pred, "predicted_b": int(r.pred_b), "iterations": r.generation,
        "external_id": f"archive:{r.entry}",
    } for r in pool.itertuples()]  # fmt: skip


def create_study(store: Store, home: Path, cfg: StudyConfig) -> str:
    """Draw the study's images, write its gold images and store it; returns its id."""
    if not cfg.triggering:
        camps = sc.campaigns_by_id(store, cfg.campaigns)
        if two := camps.loc[camps["classifier_b"].notna(), "id"].tolist():
            # Their "misclassified" seeds are the inputs A and B label differently, often
            # with A right: a misclassification study of them measured non-failures.
            raise ConfigError(
                f"campaigns {two} test two classifiers against each other: their failing "
                "seeds are inputs the two label differently, not misclassifications. Label "
                'them with --triggering ("Triggering inputs instead" on the Studies page)'
            )
    else:
        camps = sc.campaigns_by_id(store, cfg.campaigns)
        if one := camps.loc[camps["classifier_b"].isna(), "id"].tolist():
            # They were left out without a word: one classifier archives no disagreements.
            raise ConfigError(
                f"campaigns {one} test one classifier: they archive no triggering inputs. "
                "Leave them out, or label their failing seeds in a study without --triggering"
            )
    pool = (triggering_inputs if cfg.triggering else failing_seeds)(store, cfg.campaigns)
    if pool.empty and cfg.triggering:
        raise ConfigError(
            f"campaigns {cfg.campaigns} have no archived triggering input: nothing to label. "
            "Run a differential campaign (a second classifier) first."
        )
    if pool.empty:
        raise ConfigError(
            f"campaigns {cfg.campaigns} have no misclassified seed with a result image: "
            "nothing to label. Run a campaign that finds failures first."
        )
    datasets = set(pool["dataset"])
    if len(datasets) > 1:
        raise ConfigError(
            f"a study shows images of one dataset; these campaigns use {sorted(datasets)}. "
            "Create one study per dataset."
        )
    rng = np.random.default_rng(cfg.seed)
    if cfg.sample is not None and cfg.sample < len(pool):
        pool = pool.iloc[np.sort(rng.choice(len(pool), cfg.sample, replace=False))]
    dataset = get_dataset(datasets.pop())
    rows = _triggering_rows(pool) if cfg.triggering else []
    for kind in () if cfg.triggering else ("result", "seed") if cfg.seed_images else ("result",):
        for r in pool.itertuples():
            rows.append({
                "kind": kind, "campaign_id": r.campaign_id, "seed_idx": r.seed_idx,
                "generator": r.generator, "preset": r.preset,
                "image": r.result_image if kind == "result" else r.seed_image,
                "expected": r.seed_label, "predicted": r.final_pred if kind == "result"
                else r.seed_pred, "iterations": r.iterations if kind == "result" else 0,
            })  # fmt: skip
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
            rows.append({"kind": "gold", "image": rel, "expected": int(test.labels[idx]),
                         "external_id": f"test:{int(idx)}"})  # fmt: skip
    items = pd.DataFrame(rows).assign(item_id=lambda d: np.arange(len(d)))
    study = {
        "id": sid, "name": cfg.name or sid, "dataset": dataset.name, "source": "campaigns",
        "k": cfg.k, "rule": cfg.rule, "seed": cfg.seed, "resamples": cfg.resamples,
        "config": cfg.model_dump(),
    }  # fmt: skip
    try:
        label_store.create_validity_study(store, study, items)
    except BaseException:
        # Gold images of a study the store refused belong to nothing (doctor misses them).
        shutil.rmtree(home / "studies" / sid, ignore_errors=True)
        raise
    return sid


# ----------------------------------------------------------------------------- verdicts


def undecided(v: pd.DataFrame) -> pd.DataFrame:
    """The adjudication queue: complete items whose validity, or preservation when valid,
    the labellers did not agree on."""
    open_ = v["complete"] & ~v["adjudicated"] & v["kind"].ne("gold")
    unsettled = v["validity"].isna() | (v["validity"].eq(True) & v["preservation"].isna())
    return v[open_ & unsettled]


# --------------------------------------------------------------------------- statistics


def _yes(s: pd.Series) -> np.ndarray:
    return s.map(lambda x: x is True).to_numpy(dtype=float)


def _share(arr: np.ndarray) -> float:
    return float(arr.mean()) if len(arr) else float("nan")


def _ratio(arr: np.ndarray) -> float:
    """Preserved among valid, for a (n, 2) array of (valid, preserved) flags."""
    valid = arr[:, 0].sum()
    return float(arr[:, 1].sum() / valid) if valid else float("nan")


def group_table(v: pd.DataFrame, by: list[str], seed: int, resamples: int) -> pd.DataFrame:
    """% validity (#) over all complete images and % preservation (#) over valid images,
    each with a percentile bootstrap 95% CI, per group. Gold items are not in it; seed
    images, when the study has them, are a group of their own (kind), never mixed in."""
    v = v[v["complete"] & v["kind"].ne("gold")]
    if "kind" not in by and v["kind"].nunique() > 1:
        by = ["kind", *by]
    rows = []
    for key, g in v.groupby(by, dropna=False, sort=True):
        valid, pres = _yes(g["validity"]), _yes(g["preservation"])
        vci = agreement.bootstrap_ci(valid, _share, resamples, seed)
        pci = agreement.bootstrap_ci(np.stack([valid, pres], 1), _ratio, resamples, seed)
        n, nv, npres = len(g), int(valid.sum()), int(pres.sum())
        rows.append({
            **dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)),
            "n": n, "valid": nv, "valid_pct": 100 * nv / n,
            "valid_ci_low": 100 * vci.low, "valid_ci_high": 100 * vci.high,
            "valid_ci": vci.describe(),
            "undecided_validity": int(g["validity"].isna().sum()),
            # Valid images whose label preservation the answers did not settle: in neither
            # preserved nor not, so "0 preserved of 6 valid" can mean 3 undecided.
            "undecided_preservation": int((valid.astype(bool) & g["preservation"].isna()
                                           .to_numpy()).sum()),
            "preserved": npres, "preserved_pct": 100 * npres / nv if nv else float("nan"),
            "preserved_ci_low": 100 * pci.low, "preserved_ci_high": 100 * pci.high,
            "preserved_ci": pci.describe(), "preserved_ci_resamples": pci.defined,
        })  # fmt: skip
    return pd.DataFrame(rows)


def agreement_table(judgements: pd.DataFrame, items: pd.DataFrame) -> dict[str, Any]:
    """Agreement on the full answer (class, invalid or unsure) over the study's items:
    Cohen's kappa between first and second answers of items with two, Fleiss' kappa over
    items with the most common number of answers, Krippendorff's alpha over all."""
    j = judgements[judgements["item_id"].isin(items["item_id"])]
    out: dict[str, Any] = {"cohen_kappa": None, "fleiss_kappa": None, "krippendorff_alpha": None}
    if j.empty:
        return out | {"items": 0}
    per_item = j.groupby("item_id")["answer"].apply(list)
    pairs = per_item[per_item.map(len) == 2]
    if len(pairs):
        out["cohen_kappa"] = agreement.cohen_kappa([p[0] for p in pairs], [p[1] for p in pairs])
    counts = per_item.map(len)
    r = int(counts.mode().iloc[0])
    if r >= 2:
        same = per_item[counts == r]
        cats = sorted({a for lst in same for a in lst})
        table = np.array([[lst.count(c) for c in cats] for lst in same])
        out["fleiss_kappa"] = agreement.fleiss_kappa(table)
    if (counts >= 2).any():
        wide = j.pivot_table(index="labeller", columns="item_id", values="answer", aggfunc="first")
        out["krippendorff_alpha"] = agreement.krippendorff_alpha(wide.to_numpy(dtype=float))
    return out | {"items": int((counts >= 2).sum())}


def labeller_table(judgements: pd.DataFrame, items: pd.DataFrame) -> pd.DataFrame:
    """Per labeller: answers, accuracy on gold items and median seconds per answer."""
    if judgements.empty:
        return pd.DataFrame(columns=["labeller", "answers", "gold", "gold_accuracy_pct",
                                     "median_seconds"])  # fmt: skip
    j = judgements.merge(items[["item_id", "kind", "expected"]], on="item_id")
    rows = []
    for name, g in j.groupby("labeller"):
        gold = g[g["kind"] == "gold"]
        rows.append({
            "labeller": name, "answers": len(g), "gold": len(gold),
            "gold_accuracy_pct": 100 * (gold["answer"] == gold["expected"]).mean()
            if len(gold) else float("nan"),
            "median_seconds": g["seconds"].median(),
        })  # fmt: skip
    return pd.DataFrame(rows)


def load(store: Store, study_id: str) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """The study, its per-item verdicts and its raw judgements."""
    s = label_store.validity_study(store, study_id)
    if s is None:
        raise ConfigError(f"no study {study_id!r}; `latentfuzz labels list` lists them")
    it = label_store.items(store, study_id)
    j = label_store.judgements(store, study_id)
    v = agreement.verdicts(
        it, j, label_store.adjudications(store, study_id), int(s["k"]), s["rule"]
    )
    return s, v, j


def report(store: Store, study_id: str, by: tuple[str, ...] = ("generator", "preset")):
    """The per generator x perturbation table of a study (see group_table)."""
    s, v, _ = load(store, study_id)
    return group_table(v, list(by), int(s["seed"]), int(s["resamples"]))


def model_agreement(v: pd.DataFrame, rule: str) -> pd.DataFrame:
    """Which classifier people agree with on triggering inputs, per campaign: of the
    complete items judged valid, how many the labellers give A's label, B's label, or
    another (each under the study's rule, as preservation; undecided ones apart)."""
    cols = ["campaign_id", "labelled", "valid", "humans_agree_a", "humans_agree_b",
            "humans_agree_neither", "undecided"]  # fmt: skip
    t = v[(v["kind"] == "triggering") & v["complete"]] if "kind" in v else v.iloc[:0]
    if t.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for cid, g in t.groupby("campaign_id"):
        valid = g[g["validity"].map(lambda x: x is True)]
        side_a = side_b = neither = undecided_ = 0
        for it in valid.itertuples():
            a = agreement.preservation(it.answers, int(it.predicted), rule)
            b = agreement.preservation(it.answers, int(it.predicted_b), rule)
            if a:
                side_a += 1
            elif b:
                side_b += 1
            elif a is False and b is False:
                neither += 1
            else:
                undecided_ += 1
        rows.append({"campaign_id": cid, "labelled": len(g), "valid": len(valid),
                     "humans_agree_a": side_a, "humans_agree_b": side_b,
                     "humans_agree_neither": neither, "undecided": undecided_})  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


def campaign_validity(store: Store, campaign_ids: list[str]) -> pd.DataFrame:
    """Validity and preservation of each campaign's labelled result images, one verdict
    per image (each study's own rule and k): an image that several studies labelled
    counts once, with the verdict of the newest study that has all its answers. (Each
    study's verdicts counted before: a campaign with 5 failing images showed 14 valid.)"""
    cols = ["campaign", "labelled", "valid", "valid_pct", "preserved", "preserved_pct"]
    li = label_store.result_labels(store, campaign_ids)
    if li.empty:
        return pd.DataFrame(columns=cols)
    frames = []
    for sid, g in li.groupby("study_id"):
        j = label_store.judgements(store, sid)
        a = label_store.adjudications(store, sid)
        frames.append(agreement.verdicts(g, j, a, int(g["k"].iloc[0]), g["rule"].iloc[0]))
    v = pd.concat(frames)
    v = v[v["complete"]].sort_values(["study_created", "study_id"], kind="stable")
    v = v.drop_duplicates(["campaign_id", "image"], keep="last")
    rows = []
    for cid, g in v.groupby("campaign_id"):
        valid, pres = int(_yes(g["validity"]).sum()), int(_yes(g["preservation"]).sum())
        rows.append({
            "campaign": cid, "labelled": len(g), "valid": valid,
            "valid_pct": 100 * valid / len(g), "preserved": pres,
            "preserved_pct": 100 * pres / valid if valid else float("nan"),
        })  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


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
