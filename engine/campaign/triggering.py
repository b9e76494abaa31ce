"""Differential testing's figures and the validity pass (DiffGAN's outcome metrics).

For a campaign with an archive of triggering inputs (images classifiers A and B label
differently):

- triggering inputs in total and per 1,000 search evaluations, and the same for the valid
  ones (valid under every validity filter scored);
- geometric diversity: log det of the Gram matrix of L2-normalised features of a random
  subset of GEO_SUBSET valid triggering inputs (fewer when fewer exist; the subset size is
  stored and figures are comparable only at equal size). Features are the penultimate
  layer of the dataset's default classifier, the same network whoever A and B are. Higher
  (closer to 0) is more diverse; 0 for orthogonal features;
- Shannon entropy (bits) of the (label A, label B) pairs;
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

from engine.classifiers import inference
from engine.core.images import read_uint8
from engine.validators import VALIDATORS
from store import Store
from store import differential as sd

#: Size of the random subset the geometric diversity is computed on (DiffGAN fixes one).
GEO_SUBSET = 50


def penultimate(classifier: Any, x: torch.Tensor) -> torch.Tensor:
    """Features (N, F) of images (N, C, H, W) in [0, 1]: the input of the classifier's last
    linear layer; the logits where the model is opaque (TorchScript)."""
    module = getattr(classifier, "module", None)
    linears = (
        [] if module is None else [m for m in module.modules() if isinstance(m, torch.nn.Linear)]
    )
    if not linears or isinstance(module, torch.jit.ScriptModule):
        return classifier.logits(x)
    seen: list[torch.Tensor] = []
    handle = linears[-1].register_forward_hook(lambda _m, inp, _out: seen.append(inp[0]))
    try:
        with torch.no_grad(), inference.eager_only():  # hooks do not fire in a graph
            for i in range(0, len(x), 512):
                classifier.logits(x[i : i + 512])
    finally:
        handle.remove()
    return torch.cat(seen).flatten(1) if seen else torch.zeros(0, 1)


def geometric_diversity(features: torch.Tensor) -> float | None:
    """log det of the Gram matrix of L2-normalised features (N, F); None for N = 0.

    The Gram matrix of N > F vectors is singular (-inf): keep subsets at most F."""
    if len(features) == 0:
        return None
    f = torch.nn.functional.normalize(features.double(), dim=1)
    sign, logdet = torch.linalg.slogdet(f @ f.T)
    return float(logdet) if sign > 0 else float("-inf")


def label_entropy(a: np.ndarray, b: np.ndarray) -> float | None:
    """Shannon entropy in bits of the (a, b) label pairs; None when there are none."""
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
) -> pd.DataFrame:
    """Score every archived and result image of campaign `cid` with each chosen filter
    and store the scores; returns them (kind, ref, validator, score, threshold, valid)."""

    arch, res = sd.validity_inputs(store, cid)
    parts = []
    for kind, df in (("archive", arch), ("result", res)):
        if df.empty:
            continue
        images = load_images(home, df["image"].tolist())
        labels = torch.tensor(df["label"].to_numpy(), dtype=torch.long)
        for name, threshold in chosen.items():
            v = VALIDATORS.get(name)(generator, dataset, threshold)
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
) -> dict[str, Any]:
    """The differential figures of campaign `cid` (see the module docstring).

    features_of: images (N, C, H, W) in [0, 1] -> features (N, F). seed: draws the
    geometric-diversity subset. filtered: validity filters were scored."""
    arch = sd.archive(store, cid)
    per_k = 1000.0 / evaluations if evaluations else float("nan")
    out: dict[str, Any] = {
        "evaluations": int(evaluations),
        "triggering": len(arch),
        "triggering_per_1k": len(arch) * per_k,
        "filtered": filtered,
    }
    valid = arch[arch["valid"]] if filtered else arch
    out["valid_triggering"] = len(valid) if filtered else None
    out["valid_triggering_per_1k"] = len(valid) * per_k if filtered else None
    for prefix, df in (("", valid), ("all_", arch)):
        if prefix and not filtered:
            continue
        a, b, y = (df[c].to_numpy() for c in ("pred", "pred_b", "label"))
        has_b = len(df) and not pd.isna(df["pred_b"]).any()
        n = min(GEO_SUBSET, len(df))
        rng = np.random.default_rng(seed)
        pick = np.sort(rng.choice(len(df), size=n, replace=False)) if n else np.zeros(0, int)
        imgs = load_images(home, df["image"].iloc[pick].tolist()).float() / 255.0
        with torch.inference_mode():
            geo = geometric_diversity(features_of(imgs)) if n else None
        out[f"{prefix}geometric_diversity"] = geo
        out[f"{prefix}geometric_subset"] = n
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
) -> tuple[pd.DataFrame | None, dict[str, Any] | None]:
    """Score the validity filters (the campaign's, or `chosen`), then store the
    differential figures of a campaign with an archive; returns (scores, figures). Run when
    a campaign finishes, and by `latentfuzz validate`."""
    chosen = r.validators if chosen is None else chosen
    rows = validate(store, home, cid, r.generator, r.dataset, chosen) if chosen else None
    figs = None
    if r.archive:
        clf = feature_classifier(r)
        # Filtered: this pass or an earlier one scored the archive.
        scored = bool(chosen) or not sd.validity(store, cid).empty
        figs = figures(
            store, home, cid, evaluations, lambda x: penultimate(clf, x), r.config.seed, scored
        )
        sd.write_differential(store, cid, figs)
    return rows, figs
