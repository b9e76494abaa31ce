"""Per-campaign metrics for every strategy (Argus's and SINVAD's figures).

- error rate: evaluations that fail the criterion / all evaluations of the search;
- success rate: viable seeds with at least one failure / viable seeds;
- label diversity: per viable seed, the number of distinct wrong labels (any label other
  than the seed's) among its evaluated candidates, averaged over viable seeds;
- mean MSE and SSIM of each viable seed's result image to its seed image, in [0, 1];
- failures per 1,000 evaluations: seeds with a failure per 1,000 search evaluations;
- top-2 probability gap (top-1 minus top-2 softmax probability) of the result images,
  against the same gap on the dataset's test images (SINVAD's boundary check).

SSIM, one definition (Wang et al. 2004, as pytorch-msssim): an 11 x 11 Gaussian window
with sigma 1.5, data range 1, K1 = 0.01, K2 = 0.03, population (co)variances, computed on
the valid region only (no padding), averaged over the map and the channels. scikit-image's
``structural_similarity(..., gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
data_range=1)`` gives the same value (tests/engine/campaign/test_metrics.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import torch

from engine.core.similarity import WIN, mse, ssim, to_unit
from engine.search.fitness import top2

#: Test images classified for the reference gap distribution (evenly spaced over the split).
TEST_GAP_IMAGES = 1000
#: Test images classified for the confusion matrix beside the class-escape matrix.
TEST_CONFUSION_IMAGES = 10_000


def top2_gap(logits: torch.Tensor) -> torch.Tensor:
    """Top-1 minus top-2 softmax probability (N,) of logits (N, K)."""
    p, _ = top2(logits)
    return p[:, 0] - p[:, 1]


class MetricsTracker:
    """Accumulates a campaign's metrics as it runs; all state is per seed (dataset order)."""

    def __init__(
        self, n_seeds: int, seed_images: torch.Tensor, originals: torch.Tensor | None = None
    ) -> None:
        """seed_images: uint8 (n_seeds, C, H, W), the decoded seed images; originals: the
        dataset images the seeds were encoded from, the same shape, where every seed has
        one (Argus measures realism against them, not against the decoded seed)."""
        self.seed_images = seed_images
        self.originals = originals
        self.evaluations = 0
        self.failing_evaluations = 0
        self.wrong: torch.Tensor | None = None  # (n_seeds, K) wrong labels reached
        self.viable = torch.zeros(n_seeds, dtype=torch.bool)
        self.failed = torch.zeros(n_seeds, dtype=torch.bool)
        nan = torch.full((n_seeds,), float("nan"), dtype=torch.float64)
        self.mse, self.ssim, self.gap = nan.clone(), nan.clone(), nan.clone()
        #: Per generation: evaluations, failing ones, the step (lambda for interpolate)
        #: and, for strategies with image_metrics, the summed MSE and SSIM to the seed
        #: (and to the original image, where there are originals).
        self.per_generation: dict[int, dict[str, float]] = {}

    #: The tracker's state: every field (a checkpoint, engine/campaign/checkpoint.py).
    FIELDS = (
        "seed_images",
        "evaluations",
        "failing_evaluations",
        "wrong",
        "viable",
        "failed",
        "mse",
        "ssim",
        "gap",
        "per_generation",
        "originals",
    )

    def state_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.FIELDS}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> MetricsTracker:
        t = cls.__new__(cls)
        for name in cls.FIELDS:
            # A checkpoint written before originals were kept has none: those figures
            # are left out, the rest resume as before.
            setattr(t, name, state.get(name) if name == "originals" else state[name])
        # Keys are generations; a dict read back keeps them, but as whatever was saved.
        t.per_generation = {int(g): dict(r) for g, r in state["per_generation"].items()}
        return t

    def evaluated(
        self,
        seed_idx: torch.Tensor,
        logits: torch.Tensor,
        expected: torch.Tensor,
        failing: torch.Tensor,
        generation: int = 0,
        step: float = float("nan"),
        images: torch.Tensor | None = None,
    ) -> None:
        """One generation's evaluations: seed_idx (S,), logits (S, M, K), expected (S,),
        failing (S, M) by the campaign's criterion; with images (S, M, C, H, W) uint8, the
        generation's MSE and SSIM to the seed images are measured too."""
        s, m, k = logits.shape
        rec = self.per_generation.setdefault(
            generation,
            {
                "generation": generation,
                "step": step,
                "evaluations": 0,
                "failing": 0,
                "mse_sum": 0.0,
                "ssim_sum": 0.0,
                "measured": 0,
            },
        )
        n_failing = int(failing.sum())
        rec["evaluations"] += s * m
        rec["failing"] += n_failing
        if images is not None:
            flat = to_unit(images.flatten(0, 1))
            seeds = to_unit(self.seed_images[seed_idx]).repeat_interleave(m, 0)
            rec["mse_sum"] += float(mse(flat, seeds).sum())
            if min(images.shape[-2:]) >= WIN:
                rec["ssim_sum"] += float(ssim(flat, seeds).sum())
            rec["measured"] += s * m
            if self.originals is not None:
                self._against_originals(rec, seed_idx, flat, m)
        if self.wrong is None:
            self.wrong = torch.zeros(len(self.viable), k, dtype=torch.bool)
        self.evaluations += s * m
        self.failing_evaluations += n_failing
        pred = logits.argmax(2)
        # True at every (seed, predicted class) other than the seed's own: the value at a
        # repeated index is the same for every repeat, and the own class stays False.
        rows = seed_idx[:, None].expand_as(pred)
        self.wrong.index_put_((rows, pred), pred != expected[:, None])

    def _against_originals(
        self, rec: dict[str, float], seed_idx: torch.Tensor, flat: torch.Tensor, m: int
    ) -> None:
        """Add a generation's summed MSE and SSIM of its images flat (S x M, C, H, W) in
        [0, 1] to the original images of seeds seed_idx (S,)."""
        originals = to_unit(self.originals[seed_idx]).repeat_interleave(m, 0)
        rec["mse_original_sum"] = rec.get("mse_original_sum", 0.0) + float(
            mse(flat, originals).sum()
        )
        if min(flat.shape[-2:]) >= WIN:
            rec["ssim_original_sum"] = rec.get("ssim_original_sum", 0.0) + float(
                ssim(flat, originals).sum()
            )
        rec["measured_original"] = rec.get("measured_original", 0) + len(flat)

    def finished(
        self,
        seed_idx: torch.Tensor,
        failed: torch.Tensor,
        logits: torch.Tensor,
        images: torch.Tensor,
    ) -> None:
        """Seeds that stop: seed_idx (D,), failed (D,), result logits (D, K) and uint8
        result images (D, C, H, W)."""
        self.viable[seed_idx] = True
        self.failed[seed_idx] = failed
        seeds = to_unit(self.seed_images[seed_idx])
        results = to_unit(images)
        self.mse[seed_idx] = mse(results, seeds)
        if min(images.shape[-2:]) >= WIN:
            self.ssim[seed_idx] = ssim(results, seeds)
        self.gap[seed_idx] = top2_gap(logits).double()

    def row(
        self, test_gaps: torch.Tensor, test_confusion: list[list[int]] | None = None
    ) -> dict[str, Any]:
        """The campaign's metrics row; test_gaps (T,) and confusion counts of the dataset's
        test images (test_reference)."""
        v = self.viable
        n = int(v.sum())
        wrong = self.wrong[v].sum(1).double() if self.wrong is not None else torch.zeros(0)

        def mean(t: torch.Tensor) -> float | None:
            t = t[~t.isnan()]
            return float(t.mean()) if len(t) else None

        def median(t: torch.Tensor) -> float | None:
            t = t[~t.isnan()]
            return float(t.quantile(0.5)) if len(t) else None

        evals = self.evaluations
        return {
            "evaluations": evals,
            "failing_evaluations": self.failing_evaluations,
            "error_rate": self.failing_evaluations / evals if evals else None,
            "success_rate": float(self.failed[v].double().mean()) if n else None,
            "label_diversity": mean(wrong) if n else None,
            "mean_mse": mean(self.mse[v]),
            "mean_ssim": mean(self.ssim[v]),
            "failures_per_1k": 1000.0 * int(self.failed.sum()) / evals if evals else None,
            "result_gap_median": median(self.gap[v]),
            "test_gap_median": median(test_gaps.double()),
            "result_gaps": [round(float(x), 5) for x in self.gap[v] if not math.isnan(x)],
            "test_gaps": [round(float(x), 5) for x in test_gaps],
            "per_generation": [self._generation(r) for _, r in sorted(self.per_generation.items())],
            "test_confusion": test_confusion,
        }

    @staticmethod
    def _generation(r: dict[str, float]) -> dict[str, float | None]:
        n, measured = r["evaluations"], r["measured"]
        out = {
            "generation": r["generation"],
            "step": r["step"],
            "evaluations": n,
            "error_rate": r["failing"] / n if n else None,
            "mean_mse": r["mse_sum"] / measured if measured else None,
            "mean_ssim": r["ssim_sum"] / measured if measured else None,
        }
        if on := r.get("measured_original"):
            # Only where measured: the other strategies' rows stay as they were.
            out["mean_mse_original"] = r["mse_original_sum"] / on
            ssim_sum = r.get("ssim_original_sum")
            out["mean_ssim_original"] = None if ssim_sum is None else ssim_sum / on
        return out


_REFERENCE: dict[tuple, tuple[torch.Tensor, list[list[int]]]] = {}
#: Largest reference file read back from a home's cache (1,000 gaps and a confusion matrix
#: take about 30 KB): a bigger one is not ours, and is made again.
REFERENCE_FILE_LIMIT = 1 << 20


def test_reference(
    dataset, classifier, batch: int, key: tuple | None = None, cache: Path | None = None
) -> tuple[torch.Tensor, list[list[int]]]:
    """The classifier on the dataset's test images: top-2 gaps (T,) of up to
    TEST_GAP_IMAGES of them and confusion counts [true][predicted] over up to
    TEST_CONFUSION_IMAGES, both evenly spaced over the split.

    With a key (dataset, classifier hash, ...) the result is kept for the process: a study's
    campaigns share one classifier and dataset. With a `cache` folder too (the home's), it
    is kept there under the key and the dataset's fingerprint: classifying 10,000 test
    images was a tenth of a small campaign's command time, the same at every close."""
    if key is not None and key in _REFERENCE:
        return _REFERENCE[key]
    path = None
    if key is not None and cache is not None:
        path = cache / f"{_file_key(dataset, classifier, batch, key)}.json"
        ref = _read_reference(path, dataset.num_classes)
        if ref is not None:
            _REFERENCE[key] = ref
            return ref
    ref = _test_reference(dataset, classifier, batch)
    if key is not None:
        _REFERENCE[key] = ref
    if path is not None:
        with contextlib.suppress(OSError):  # a read-only or full home: made again next time
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
            tmp.write_text(json.dumps({"gaps": ref[0].tolist(), "confusion": ref[1]}))
            os.replace(tmp, path)
    return ref


def _file_key(dataset, classifier, batch: int, key: tuple) -> str:
    # The batch too: a file holds exactly what this campaign would compute (the last bit
    # of a logit can differ between batch sizes).
    what = [
        *map(str, key),
        batch,
        dataset.fingerprint(),
        str(getattr(classifier, "device", "")),
        torch.__version__,
        TEST_GAP_IMAGES,
        TEST_CONFUSION_IMAGES,
    ]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:32]


def _read_reference(path: Path, k: int) -> tuple[torch.Tensor, list[list[int]]] | None:
    """The cached reference at `path`, or None when absent or not one we wrote (then it
    is made again, and the file replaced)."""
    try:
        if path.stat().st_size > REFERENCE_FILE_LIMIT:
            return None
        data = json.loads(path.read_text())
        gaps, confusion = data["gaps"], data["confusion"]
        ok = (
            isinstance(gaps, list)
            and len(gaps) <= TEST_GAP_IMAGES
            and all(isinstance(g, float) and 0.0 <= g <= 1.0 for g in gaps)
            and isinstance(confusion, list)
            and len(confusion) == k
            and all(
                isinstance(row, list)
                and len(row) == k
                and all(type(c) is int and c >= 0 for c in row)
                for row in confusion
            )
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (torch.tensor(gaps, dtype=torch.float32), confusion) if ok else None


def _spaced(n: int, k: int) -> torch.Tensor:
    return torch.linspace(0, n - 1, min(n, k)).round().long().unique()


def _test_reference(dataset, classifier, batch: int) -> tuple[torch.Tensor, list[list[int]]]:
    test = dataset.load("test")
    k = dataset.num_classes
    idx = _spaced(len(test), TEST_CONFUSION_IMAGES)
    logits = []
    for i in range(0, len(idx), batch):
        x = test.images[idx[i : i + batch]]
        x = x.float() / 255.0 if x.dtype == torch.uint8 else x.float()
        logits.append(classifier.logits(x.to(classifier.device)).cpu())
    if not logits:
        return torch.zeros(0), [[0] * k for _ in range(k)]
    logits = torch.cat(logits)
    pairs = test.labels[idx].long() * k + logits.argmax(1)
    confusion = torch.bincount(pairs, minlength=k * k).view(k, k)
    gaps = top2_gap(logits[_spaced(len(idx), TEST_GAP_IMAGES)])
    return gaps, confusion.tolist()
