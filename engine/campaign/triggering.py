"""Differential testing's figures and the validity pass (DiffGAN's outcome metrics).

For a campaign with an archive of triggering inputs (images classifiers A and B label
differently):

- triggering inputs in total and per 1,000 search evaluations, and the same for the valid
  ones (valid under every validity filter scored);
- geometric diversity (engine/search/diversity.py): the mean log det of the Gram matrix of
  L2-normalised features over random subsets of the valid triggering inputs (DiffGAN: 30
  draws of 1,000; sizes and draws stored, figures comparable only at equal size). Features
  are a layer of the dataset's default classifier, the same network whoever A and B are.
  Higher (closer to 0) is more diverse; 0 for orthogonal features;
- DiffGAN's Shannon diversity (nats) of the triggering inputs' intended classes, and the
  label-pair entropy (bits) of their (label A, label B) pairs;
- the split against the generator's intended label: only A right, only B right, both
  wrong (a triggering input cannot have both right).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from engine.campaign import realism
from engine.core.images import read_uint8
from engine.search.diversity import (
    GeometricSpec,
    extractor,
    geometric_diversity,
    linear_input,
    shannon_diversity,
)
from engine.validators import VALIDATORS
from store import Store
from store import differential as sd


def penultimate(classifier: Any, x: torch.Tensor) -> torch.Tensor:
    """Features (N, F) of images (N, C, H, W) in [0, 1]: the input of the classifier's last
    linear layer; the logits where the model is opaque (TorchScript)."""
    return linear_input(classifier, x, first=False)


def label_entropy(a: np.ndarray, b: np.ndarray) -> float | None:
    """Label-pair entropy: the Shannon entropy in bits of the (a, b) label pairs (not
    DiffGAN's Shannon diversity, which is shannon_diversity); None when there are none."""
    if len(a) == 0:
        return None
    _, counts = np.unique(np.stack([a, b], 1), axis=0, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def split(label: np.ndarray, a: np.ndarray, b: np.ndarray) -> dict[str, int]:
    """Which classifier is right on each triggering input, against `label`."""
    return {
        "only_a_right": int(((a == label) & (b != label)).sum()),
        "only_b_right": int(((b == label) & (a != label)).sum()),
        "both_wrong": int(((a != label) & (b != label)).sum()),
    }


def load_images(home: Path, paths: list[str]) -> torch.Tensor:
    """uint8 images (N, C, H, W) from PNGs relative to the home."""
    arrs = [read_uint8(Path(home) / p) for p in paths]
    if not arrs:
        return torch.zeros(0, dtype=torch.uint8)
    return torch.from_numpy(np.stack(arrs))


def validate(
    store: Store,
    home: Path,
    cid: str,
    generator: Any,
    dataset: Any,
    chosen: dict[str, float | None],
    classifier: str | None = None,
) -> pd.DataFrame:
    """Score every archived and result image of campaign `cid` with each chosen filter
    and store the scores; returns them (kind, ref, validator, score, threshold, valid).
    classifier: the campaign's classifier under test (a filter that needs an independent
    one picks another)."""

    arch, res = sd.validity_inputs(store, cid)
    parts = []
    # Each filter once for both kinds: the model-based ones load and calibrate as they
    # are built.
    built: dict[str, Any] = {}
    for kind, df in (("archive", arch), ("result", res)):
        if df.empty:
            continue
        images = load_images(home, df["image"].tolist())
        labels = torch.tensor(df["label"].to_numpy(), dtype=torch.long)
        for name, threshold in chosen.items():
            if name not in built:
                built[name] = VALIDATORS.get(name)(
                    generator, dataset, threshold, classifier=classifier, cache=Path(home) / "cache"
                )
            v = built[name]
            with torch.inference_mode():
                score = v.score(images, labels).numpy()
            parts.append(
                pd.DataFrame(
                    {
                        "kind": kind,
                        "ref": df["ref"].to_numpy(),
                        "validator": name,
                        "score": score,
                        "threshold": v.threshold,
                        "valid": score >= v.threshold,
                    }
                )
            )
    rows = (
        pd.concat(parts, ignore_index=True)
        if parts
        else pd.DataFrame(columns=["kind", "ref", "validator", "score", "threshold", "valid"])
    )
    sd.write_validity(store, cid, rows)
    return rows


def figures(
    store: Store,
    home: Path,
    cid: str,
    evaluations: int,
    features_of: Any,
    seed: int,
    filtered: bool,
    spec: GeometricSpec | None = None,
) -> dict[str, Any]:
    """The differential figures of campaign `cid` (see the module docstring).

    features_of: images (N, C, H, W) in [0, 1] -> features (N, F). seed: draws the
    geometric-diversity subsets. filtered: validity filters were scored. spec: how the
    geometric diversity is measured (DiffGAN's subset and draws by default)."""
    spec = spec or GeometricSpec()
    arch = sd.archive(store, cid)
    per_k = 1000.0 / evaluations if evaluations else float("nan")
    out: dict[str, Any] = {
        "evaluations": int(evaluations),
        "triggering": len(arch),
        "triggering_per_1k": len(arch) * per_k,
        "filtered": filtered,
    }
    valid = arch[arch["valid"]] if filtered else arch
    # The valid inputs are among all of them: each image's features are computed once.
    seen: dict[str, torch.Tensor] = {}

    def cached(paths: list[str]) -> torch.Tensor:
        new = sorted({p for p in paths if p not in seen})
        if new:
            images = load_images(home, new).float() / 255.0
            seen.update(zip(new, features_of(images), strict=True))
        return torch.stack([seen[p] for p in paths])

    out["valid_triggering"] = len(valid) if filtered else None
    out["valid_triggering_per_1k"] = len(valid) * per_k if filtered else None
    for prefix, df in (("", valid), ("all_", arch)):
        if prefix and not filtered:
            continue
        a, b, y = (df[c].to_numpy() for c in ("pred", "pred_b", "label"))
        has_b = len(df) and not pd.isna(df["pred_b"]).any()
        paths = df["image"].tolist()

        def features_at(idx: np.ndarray, paths: list[str] = paths) -> torch.Tensor:
            return cached([paths[i] for i in idx])

        geo = geometric_diversity(len(df), features_at, spec, seed)
        out.update({f"{prefix}{k}": v for k, v in geo.items()})
        out[f"{prefix}shannon_diversity"] = shannon_diversity(y)
        out[f"{prefix}label_entropy"] = label_entropy(a, b) if has_b else None
        if has_b:
            out.update({f"{prefix}{k}": v for k, v in split(y, a, b.astype(int)).items()})
    pairs = arch.groupby(["pred", "pred_b"]).size() if len(arch) else pd.Series(dtype=int)
    out["pairs"] = [[int(a), int(b), int(n)] for (a, b), n in pairs.items()]
    # JSON has no NaN or infinity (a singular Gram matrix gives -inf): stored as null.
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}


def feature_classifier(r: Any) -> Any:
    """The dataset's default classifier (loaded once; A or B when one of them is it)."""
    # Deferred (start-up time: loads safetensors, pydantic).
    from engine.models import zoo

    name = zoo.resolve("classifier", r.config.dataset, None)
    for clf, clf_name in ((r.classifier, r.classifier_name), (r.classifier_b, r.classifier_b_name)):
        if clf is not None and clf_name == name:
            return clf
    return zoo.load_classifier(name, r.config.dataset, r.config.device)


def close(
    r: Any,
    store: Store,
    home: Path,
    cid: str,
    evaluations: int,
    chosen: dict[str, float | None] | None = None,
    spec: GeometricSpec | None = None,
) -> tuple[pd.DataFrame | None, dict[str, Any] | None]:
    """Score the validity filters (the campaign's, or `chosen`), then store the
    differential figures of a campaign with an archive (geometric diversity as `spec`
    says, DiffGAN's by default) and every campaign's realism (engine/campaign/realism.py);
    returns (scores, figures). Run when a campaign finishes, and by `latentfuzz validate`."""
    spec = spec or GeometricSpec()
    chosen = r.validators if chosen is None else chosen
    rows = (
        validate(store, home, cid, r.generator, r.dataset, chosen, r.classifier_name)
        if chosen
        else None
    )
    figs = None
    if r.archive:
        clf = feature_classifier(r)
        # Filtered: this pass or an earlier one scored the archive.
        scored = bool(chosen) or not sd.validity(store, cid).empty
        features_of = extractor(clf, spec.features)
        figs = figures(store, home, cid, evaluations, features_of, r.config.seed, scored, spec)
        sd.write_differential(store, cid, figs)
    with torch.inference_mode():
        realism.measure(store, home, cid, r)
    return rows, figs
