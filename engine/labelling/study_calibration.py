"""Validity filters on a validity study's images: score them, calibrate the scores against
people's verdicts (engine/labelling/calibration.py), and hand a fitted threshold to
`latentfuzz validate --validator NAME=calibrated:STUDY`.

The images calibrated are the study's images (results, seed images, triggering inputs,
imported ones); gold items, real test images shown to check the labellers, are left out,
as from the study's other figures. Validators that need the generator (the GAN's
discriminator) score the images of the study's campaigns whose generator they can use,
when those campaigns share one generator (scores of two GANs' discriminators are on
different scales, so they are not pooled); an imported study has none, and they are
skipped with the reason. Filters are told the classifier the campaigns tested, so that
`classifier-confidence` picks one independent of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from engine.campaign.config import from_record
from engine.campaign.resolve import resolve
from engine.core.errors import ConfigError, LatentfuzzError
from engine.core.images import read_uint8
from engine.core.untrusted import UntrustedFileError, inside
from engine.datasets import get_dataset
from engine.labelling.calibration import CannotCalibrate, calibrate
from engine.labelling.statistics import load
from engine.validators import VALIDATORS
from store import Store
from store import calibration as store_cal
from store import campaigns as sc
from store import labels as label_store


@dataclass
class Scored:
    """What scoring a study did: images scored per validator, validators skipped (with
    the reason), validators that scored part of the study (which part, and why), and
    images no validator could read (with the first reason)."""

    scored: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    partly: dict[str, str] = field(default_factory=dict)
    unreadable: int = 0
    why_unreadable: str = ""


def _study(store: Store, study_id: str) -> dict:
    s = label_store.validity_study(store, study_id)
    if s is None:
        raise ConfigError(f"no validity study {study_id!r}; `latentfuzz labels list` lists them")
    return s


def _campaigns(store: Store, items: pd.DataFrame) -> pd.DataFrame:
    ids = sorted(set(items["campaign_id"].dropna()))
    return sc.campaigns_by_id(store, ids) if ids else pd.DataFrame(columns=["id", "generator"])


def _generator(store: Store, campaign_id: str) -> object:
    return resolve(from_record(sc.campaign(store, campaign_id)["config"])).generator


def study_generator(store: Store, items: pd.DataFrame) -> tuple[object | None, str]:
    """The generator of the study's campaigns when they share one, else (None, why)."""
    camps = _campaigns(store, items)
    if camps.empty:
        return None, "its images come from no campaign (an imported study)"
    names = sorted(set(camps["generator"]))
    if len(names) != 1:
        return None, f"its images come from campaigns of {len(names)} generators {names}"
    return _generator(store, str(camps["id"].iloc[0])), ""


def study_classifier(store: Store, items: pd.DataFrame) -> str | None:
    """The classifier the study's campaigns tested when they share one, else None (the
    dataset's default is then taken to be the one under test)."""
    names = set(_campaigns(store, items).get("classifier", pd.Series(dtype=object)).dropna())
    return names.pop() if len(names) == 1 else None


def usable_part(store: Store, items: pd.DataFrame, cls: type) -> tuple[object, list, str]:
    """For a filter that needs the generator, in a study of several generators: (the
    generator, the campaign ids, which part) of the one generator it can use; (None, [],
    why not) when none or several can (two discriminators' scores are not comparable)."""
    camps = _campaigns(store, items)
    fits = {}
    for name, part in camps.groupby("generator", sort=True):
        gen = _generator(store, str(part["id"].iloc[0]))
        if cls.check(gen) is None:
            fits[name] = (gen, part["id"].tolist())
    if len(fits) == 1:
        ((name, (gen, ids)),) = fits.items()
        others = sorted(set(camps["generator"]) - {name})
        return gen, ids, f"only the images of its {name} campaigns, not those of {others}"
    if not fits:
        return None, [], f"none of its generators {sorted(set(camps['generator']))} suits it"
    return (
        None,
        [],
        f"several of its generators suit it {sorted(fits)}, and their scores are on different "
        "scales; calibrate a study of one of them",
    )


def _images(home: Path, items: pd.DataFrame, shape: tuple) -> tuple[pd.DataFrame, list, Scored]:
    """The items whose image reads as the dataset's shape, their uint8 arrays, and a
    count of the others with the first reason."""
    out = Scored()
    keep, arrays = [], []
    for it in items.itertuples():
        why = ""
        if pd.isna(it.expected):
            why = f"image {it.item_id} has no expected label"
        else:
            try:
                path = inside(home, str(it.image), "image", source=f"study item {it.item_id}")
                arr = read_uint8(path) if path.is_file() else None
                if arr is None:
                    why = f"image {it.item_id} is not a file in the home ({it.image})"
                elif tuple(arr.shape) != tuple(shape):
                    why = f"image {it.item_id} has shape {tuple(arr.shape)}, not {tuple(shape)}"
            except (UntrustedFileError, OSError, ValueError) as e:
                why = str(e).splitlines()[0] if str(e) else type(e).__name__
        if why:
            out.unreadable += 1
            out.why_unreadable = out.why_unreadable or why
        else:
            keep.append(it.Index)
            arrays.append(arr)
    return items.loc[keep], arrays, out


def score_study(
    store: Store, home: Path, study_id: str, validators: list[str] | None = None
) -> Scored:
    """Score every image of a study but its gold ones with each validator (those named, else every
    one that can score it) and store the scores, replacing earlier ones."""
    s = _study(store, study_id)
    for name in validators or []:
        if name not in VALIDATORS:
            raise ConfigError(
                f"validity filter {name!r} unknown; expected one of {VALIDATORS.names()}"
            )
    items = label_store.items(store, study_id)
    items = items[items["kind"].ne("gold")]
    dataset = get_dataset(s["dataset"])
    generator, why_none = study_generator(store, items)
    classifier = study_classifier(store, items)
    mixed = _campaigns(store, items)["generator"].nunique() > 1
    use, arrays, out = _images(Path(home), items, dataset.shape)
    images = torch.from_numpy(np.stack(arrays)) if arrays else None
    labels = torch.tensor(use["expected"].astype(int).to_numpy(), dtype=torch.long)
    rows = []
    for name in validators or VALIDATORS.names():
        cls = VALIDATORS.get(name)
        gen, keep = generator, np.ones(len(use), dtype=bool)
        why = cls.check(generator)
        if why is not None and mixed:
            gen, ids, part = usable_part(store, items, cls)
            if gen is None:
                out.skipped[name] = (
                    f"it needs the images' generator, and in study {study_id} {part}"
                )
                continue
            keep = use["campaign_id"].isin(ids).to_numpy()
            out.partly[name] = part
        elif why is not None:
            out.skipped[name] = (
                f"it needs the images' generator, and study {study_id} has none: {why_none}"
                if generator is None
                else why
            )
            continue
        if images is None or not keep.any():
            out.skipped[name] = f"study {study_id} has no image it can read"
            continue
        v = cls(gen, dataset, None, classifier=classifier)
        mask = torch.tensor(keep)
        with torch.inference_mode():
            score = v.score(images[mask], labels[mask]).double().numpy()
            pres = v.preserves(images[mask], labels[mask])
        rows.append(
            pd.DataFrame(
                {
                    "item_id": use["item_id"].to_numpy()[keep],
                    "validator": name,
                    "score": score,
                    "preserves": np.nan if pres is None else pres.double().numpy(),
                }
            )
        )
        out.scored[name] = int(keep.sum())
    if rows:
        store_cal.write_study_scores(store, study_id, pd.concat(rows, ignore_index=True))
    return out


TABLE_COLUMNS = [
    "validator",
    "verdict",
    "n",
    "positives",
    "undecided",
    "unscored",
    "auc",
    "auc_ci_low",
    "auc_ci_high",
    "threshold",
    "balanced_accuracy",
    "precision",
    "recall",
    "kappa",
    "accept_at",
    "reject_at",
    "decides",
    "decides_share",
    "note",
]


def _verdicts(v: pd.DataFrame) -> pd.DataFrame:
    return v[v["kind"].ne("gold")][["item_id", "validity", "preservation"]]


def _of_generator(store: Store, study_id: str, generator: str) -> pd.Series:
    items = label_store.items(store, study_id)
    return items.loc[items["generator"].eq(generator), "item_id"]


def calibrations(
    store: Store, study_id: str, validators: list[str] | None = None, generator: str | None = None
) -> dict:
    """{(validator, verdict): Calibration or the one-line reason it cannot be computed},
    verdict "validity" over all scored images and "preservation" over valid ones (only
    where the validator gives a preservation score); over the images of one generator
    when `generator` is given (validators that scored none of them are left out)."""
    s, v, _ = load(store, study_id)
    scores = store_cal.study_scores(store, study_id, validators)
    seed, resamples = int(s["seed"]), int(s["resamples"])
    out: dict = {}
    verdicts = _verdicts(v)
    if generator is not None:
        ids = _of_generator(store, study_id, generator)
        verdicts = verdicts[verdicts["item_id"].isin(ids)]
        scores = scores[scores["item_id"].isin(ids)]
    for name, part in scores.groupby("validator", sort=True):
        m = verdicts.merge(part, on="item_id", how="left")
        for what, col in (("validity", "score"), ("preservation", "preserves")):
            if what == "preservation":
                if part["preserves"].isna().all():
                    continue
                m = m[m["validity"].map(lambda x: x is True)]
            try:
                out[(name, what)] = calibrate(
                    m[col].to_numpy(dtype=float), m[what].to_numpy(), seed, resamples, what
                )
            except CannotCalibrate as e:
                out[(name, what)] = str(e)
    return out


def table_of(calibs: dict) -> pd.DataFrame:
    """calibrations' result as one row per validator and verdict (TABLE_COLUMNS); a row
    that cannot be computed has its reason in `note` and NaN figures."""
    rows = []
    for (name, what), c in calibs.items():
        base = {"validator": name, "verdict": what}
        rows.append({**base, "note": c} if isinstance(c, str) else {**base, **c.as_row()})
    return pd.DataFrame(rows).reindex(columns=TABLE_COLUMNS)


def study_generators(store: Store, study_id: str) -> list[str]:
    """The generators of a study's images but its gold ones (an imported study's are the
    names its file gives, e.g. the ICST study's vae, gan and sd)."""
    items = label_store.items(store, study_id)
    return sorted(set(items.loc[items["kind"].ne("gold"), "generator"].dropna()))


def calibration_by_generator(store: Store, study_id: str) -> pd.DataFrame:
    """The calibration table over each generator's images apart (a `generator` column
    first), for a study of several generators; empty for one (the pooled table is it).

    A pooled AUC also rewards a filter for telling the generators apart when their shares
    of invalid images differ; these rows show what is left within each."""
    names = study_generators(store, study_id)
    if len(names) < 2:
        return pd.DataFrame(columns=["generator", *TABLE_COLUMNS])
    frames = [
        table_of(calibrations(store, study_id, generator=g)).assign(generator=g) for g in names
    ]
    return pd.concat(frames, ignore_index=True).reindex(columns=["generator", *TABLE_COLUMNS])


def calibration_table(
    store: Store, study_id: str, validators: list[str] | None = None
) -> pd.DataFrame:
    """The calibration table of a study (table_of); empty when nothing was scored."""
    return table_of(calibrations(store, study_id, validators))


def roc_points(store: Store, study_id: str) -> pd.DataFrame:
    """validator, fpr, tpr: each scored validator's ROC curve against the validity
    verdict (a point per distinct score, from (0, 0) to (1, 1)), for the page's chart."""
    _, v, _ = load(store, study_id)
    scores = store_cal.study_scores(store, study_id)
    verdicts = _verdicts(v)
    frames = []
    for name, part in scores.groupby("validator", sort=True):
        m = verdicts.merge(part, on="item_id")
        m = m[m["validity"].map(lambda x: isinstance(x, bool))]
        y = m["validity"].astype(bool).to_numpy()
        if y.all() or not y.any():
            continue
        order = np.argsort(-m["score"].to_numpy(), kind="stable")
        s, yy = m["score"].to_numpy()[order], y[order]
        last = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1]  # end of each distinct score
        tpr = np.r_[0, np.cumsum(yy)[last] / yy.sum()]
        fpr = np.r_[0, np.cumsum(~yy)[last] / (~yy).sum()]
        frames.append(pd.DataFrame({"validator": name, "fpr": fpr, "tpr": tpr}))
    if not frames:
        return pd.DataFrame(columns=["validator", "fpr", "tpr"])
    return pd.concat(frames, ignore_index=True)


def calibrated_threshold(store: Store, study_id: str, validator: str) -> float:
    """The threshold fitted on a study (balanced accuracy), for `validate`; one-line
    errors saying what to run when the study is unknown, has no verdict, or was never
    scored with this validator."""
    _study(store, study_id)
    if validator not in store_cal.scored_validators(store, study_id):
        raise ConfigError(
            f"validator {validator!r} was never scored on study {study_id}; run "
            f"`latentfuzz labels calibrate {study_id} --validator {validator}` first"
        )
    c = calibrations(store, study_id, [validator]).get((validator, "validity"))
    if isinstance(c, str):
        raise LatentfuzzError(f"{validator}=calibrated:{study_id}: {c}")
    return float(c.threshold)
