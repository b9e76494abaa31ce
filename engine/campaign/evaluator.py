"""Decoding and classifying candidates: bounded batches, one decode for two classifiers,
and model failures turned into one-line errors."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import numpy as np
import torch

from engine.campaign.resolve import Resolved
from engine.core.errors import ModelError
from engine.core.images import to_uint8


class Evaluator:
    """Decode + classify in bounded batches; keeps the batch sizes for benchmarks.

    A differential campaign's images are decoded once and classified by both classifiers:
    the logits returned are A's (N, K) then B's, side by side (N, 2K); ``Campaign.split``
    takes them apart. Strategies carry them with each individual without reading them.
    """

    def __init__(self, r: Resolved) -> None:
        self.gen, self.clf, self.batch = r.generator, r.classifier, r.config.batch_size
        self.clf_b = r.classifier_b
        self.batch_sizes: list[int] = []
        self.seconds = 0.0
        #: Benchmark twins' time (engine/bench/campaign.py); zero in an ordinary campaign.
        self.raw_seconds = 0.0

    def state_dict(self) -> dict[str, object]:
        """The batch sizes so far (the campaign's evaluation count), for a checkpoint."""
        return {"batch_sizes": torch.tensor(self.batch_sizes, dtype=torch.long)}

    def load_state_dict(self, state: dict[str, object]) -> None:
        self.batch_sizes = [int(b) for b in state["batch_sizes"].tolist()]

    def __call__(self, z: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Latents (N, *L), labels (N,) -> logits (N, K), uint8 images (N, C, H, W)."""
        t0 = time.perf_counter()
        try:
            return self._evaluate(z, labels)
        finally:
            self.seconds += time.perf_counter() - t0

    def _evaluate(self, z: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, images = [], []
        dev = self.gen.device
        n = z.shape[0]
        step = split(n, self.batch)
        for i in range(0, n, step):
            zb, yb = z[i : i + step].to(dev), labels[i : i + step].to(dev)
            with model_errors("generator", zb.shape[0]):
                x = self.gen.decode(zb, yb if self.gen.conditional else None)
            with model_errors("classifier", zb.shape[0]):
                out = self.clf.logits(x, finite_input=True).cpu()
            if self.clf_b is not None:
                with model_errors("classifier B", zb.shape[0]):
                    out = torch.cat([out, self.clf_b.logits(x, finite_input=True).cpu()], 1)
            logits.append(out)
            images.append(to_uint8(x).cpu())
            self.batch_sizes.append(int(zb.shape[0]))
        if len(logits) == 1:
            return logits[0], images[0]
        return torch.cat(logits), torch.cat(images)


def split(n: int, cap: int) -> int:
    """The batch size that runs n candidates under `cap`: as many batches as the cap needs,
    k = ceil(n / cap), of equal sizes. 135 candidates at 128 run as 68 + 67, not 128 + 7
    (a batch of 7 runs at two thirds of the best rate). A stored campaign's replay runs its
    stored cap through this rule again: changing it changes resumed results' last bits."""
    return -(-n // -(-n // cap)) if n else 1


#: A cap other than the curve's fastest size is taken for a campaign's own step sizes
#: only when it is predicted at least this much faster: no churn for a rounding.
GAIN = 0.02


def step_counts(r, spread: int = 64) -> list[int]:
    """How many candidates campaign `r`'s steps can evaluate at once, known before it
    starts: its seeds (the viability check), then each count of seeds still searching
    times the strategy's population (the vectors it holds per seed; a GA's later
    generations ask fewer). At most `spread` seed counts, evenly spaced, stand for them."""
    seeds = r.config.seeds
    per_seed = max(1, int(r.strategy.held_per_seed(1)[0]))
    active = np.unique(np.linspace(1, seeds, min(seeds, spread)).round().astype(int))
    return [seeds, *(int(s) * per_seed for s in active[::-1])]


def fit(curve: dict[int, float], counts: list[int], limit: int | None, best: int) -> int:
    """The batch cap for a campaign whose steps evaluate `counts` candidates (`split`
    runs n candidates as k = ceil(n / cap) equal batches):
    of the caps between the curve's smallest and largest measured sizes (and `limit`, the
    memory bound), the one that runs the counts fastest at the curve's rates (items/s,
    linear between sizes, as engine/bench/scale.py's shape bound); `best`, the curve's
    fastest size, unless another cap is at least `GAIN` faster. A cap above a step's count
    runs it as one batch: no step ever runs a batch larger than itself."""
    if len(curve) < 2 or not counts:
        return best
    sizes = np.array(sorted(curve), dtype=float)
    rate = np.array([curve[int(b)] for b in sizes])
    top = int(min(sizes[-1], limit or sizes[-1]))
    best = min(best, top)
    caps = np.unique(np.append(np.arange(int(sizes[0]), top + 1), best)).astype(float)
    n = np.asarray(counts, dtype=float)[None, :]
    k = np.ceil(n / caps[:, None])
    seconds = (n / np.interp(n / k, sizes, rate)).sum(1)
    i = int(seconds.argmin())
    mine = float(seconds[np.searchsorted(caps, best)])
    return int(caps[i]) if seconds[i] < (1 - GAIN) * mine else best


@contextlib.contextmanager
def model_errors(what: str, n: int) -> Iterator[None]:
    """Turn a model's own exception (a classifier that fails only on large batches, a
    TorchScript error with its interpreter traceback) into one line that ends the campaign
    `failed` with the model's message."""
    try:
        yield
    except (ModelError, KeyboardInterrupt):
        raise
    except Exception as e:  # noqa: BLE001 - any model failure ends the campaign the same way
        lines = [x.strip() for x in str(e).splitlines() if x.strip()]
        msg = lines[-1] if lines else type(e).__name__
        raise ModelError(
            f"the {what} failed on a batch of {n} images: {msg}; fix the model, or lower "
            "batch_size (--batch-size) if it only fails on large batches"
        ) from e
