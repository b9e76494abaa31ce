"""What a validity study's judgements add up to: verdicts per item, the adjudication queue,
validity and preservation per group with bootstrap intervals, agreement between labellers
and with each classifier, and each campaign's labelled validity."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from engine.core.errors import ConfigError
from engine.labelling import agreement
from store import Store
from store import campaigns as campaign_store
from store import labels as label_store

#: Shown for a group key a strategy does not have (SINVAD's and Argus's perturbation
#: preset): "None" in the dashboard, "nan" in `labels report`.
NO_VALUE = "—"


def undecided(v: pd.DataFrame) -> pd.DataFrame:
    """The adjudication queue: complete items whose validity, or preservation when valid,
    the labellers did not agree on."""
    open_ = v["complete"] & ~v["adjudicated"] & v["kind"].ne("gold")
    unsettled = v["validity"].isna() | (v["validity"].eq(True) & v["preservation"].isna())
    return v[open_ & unsettled]


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
    # A SINVAD and an Argus campaign on one VAE share generator and (no) preset: without
    # their strategy they were one row, `mnist-vae / None`. Added, like kind, only where
    # it varies, so that a study of one strategy reads as before.
    if "strategy" in v and "strategy" not in by and v["strategy"].nunique() > 1:
        by = ["strategy", *by]
    if "kind" not in by and v["kind"].nunique() > 1:
        by = ["kind", *by]
    rows = []
    for key, g in v.groupby(by, dropna=False, sort=True):
        valid, pres = _yes(g["validity"]), _yes(g["preservation"])
        vci = agreement.bootstrap_ci(valid, _share, resamples, seed)
        pci = agreement.bootstrap_ci(np.stack([valid, pres], 1), _ratio, resamples, seed)
        n, nv, npres = len(g), int(valid.sum()), int(pres.sum())
        rows.append(
            {
                **dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)),
                "n": n,
                "valid": nv,
                "valid_pct": 100 * nv / n,
                "valid_ci_low": 100 * vci.low,
                "valid_ci_high": 100 * vci.high,
                "valid_ci": vci.describe(),
                "undecided_validity": int(g["validity"].isna().sum()),
                # Valid images whose label preservation the answers did not settle: in neither
                # preserved nor not, so "0 preserved of 6 valid" can mean 3 undecided.
                "undecided_preservation": int(
                    (valid.astype(bool) & g["preservation"].isna().to_numpy()).sum()
                ),
                "preserved": npres,
                "preserved_pct": 100 * npres / nv if nv else float("nan"),
                "preserved_ci_low": 100 * pci.low,
                "preserved_ci_high": 100 * pci.high,
                "preserved_ci": pci.describe(),
                "preserved_ci_resamples": pci.defined,
            }
        )
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
        return pd.DataFrame(
            columns=["labeller", "answers", "gold", "gold_accuracy_pct", "median_seconds"]
        )
    j = judgements.merge(items[["item_id", "kind", "expected"]], on="item_id")
    rows = []
    for name, g in j.groupby("labeller"):
        gold = g[g["kind"] == "gold"]
        rows.append(
            {
                "labeller": name,
                "answers": len(g),
                "gold": len(gold),
                "gold_accuracy_pct": 100 * (gold["answer"] == gold["expected"]).mean()
                if len(gold)
                else float("nan"),
                "median_seconds": g["seconds"].median(),
            }
        )
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


def with_strategy(store: Store, v: pd.DataFrame) -> pd.DataFrame:
    """The verdicts with each item's campaign's strategy (None for an item of no campaign
    in this store: a gold image, an imported study's), for group_table."""
    ids = v["campaign_id"].dropna().unique().tolist() if "campaign_id" in v else []
    camps = campaign_store.campaigns_by_id(store, ids) if ids else pd.DataFrame()
    named = dict(zip(camps["id"], camps["strategy"], strict=True)) if len(camps) else {}
    return v.assign(strategy=[named.get(c) for c in v.get("campaign_id", [None] * len(v))])


def group_keys(t: pd.DataFrame) -> list[str]:
    """The columns a group_table is grouped by (those before its counts)."""
    return list(t.columns[: t.columns.get_loc("n")]) if "n" in t else []


def key_text(value: Any) -> str:
    """A group key as text: NO_VALUE for a missing one (None, NaN)."""
    missing = value is None or (isinstance(value, float) and np.isnan(value))
    return NO_VALUE if missing else str(value)


def report(store: Store, study_id: str, by: tuple[str, ...] = ("generator", "preset")):
    """The per generator x perturbation table of a study (see group_table), split by
    strategy where the study's campaigns use more than one."""
    s, v, _ = load(store, study_id)
    return group_table(with_strategy(store, v), list(by), int(s["seed"]), int(s["resamples"]))


def model_agreement(v: pd.DataFrame, rule: str) -> pd.DataFrame:
    """Which classifier people agree with on triggering inputs, per campaign: of the
    complete items judged valid, how many the labellers give A's label, B's label, or
    another (each under the study's rule, as preservation; undecided ones apart)."""
    cols = [
        "campaign_id",
        "labelled",
        "valid",
        "humans_agree_a",
        "humans_agree_b",
        "humans_agree_neither",
        "undecided",
    ]
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
        rows.append(
            {
                "campaign_id": cid,
                "labelled": len(g),
                "valid": len(valid),
                "humans_agree_a": side_a,
                "humans_agree_b": side_b,
                "humans_agree_neither": neither,
                "undecided": undecided_,
            }
        )
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
        rows.append(
            {
                "campaign": cid,
                "labelled": len(g),
                "valid": valid,
                "valid_pct": 100 * valid / len(g),
                "preserved": pres,
                "preserved_pct": 100 * pres / valid if valid else float("nan"),
            }
        )
    return pd.DataFrame(rows, columns=cols)
