"""Shared pieces of the training commands: progress bars, evaluation, timing, cards."""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import torch
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[..., None]]:
    """Yields advance(**stats): one step forward, with stats shown after the bar."""
    cols = [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[stats]}"),
    ]
    with Progress(*cols, transient=False) as bar:
        task = bar.add_task(description, total=total, stats="")

        def advance(**stats: float) -> None:
            bar.update(task, advance=1, stats="  ".join(f"{k} {v:.4g}" for k, v in stats.items()))

        yield advance


def batches(n: int, size: int, rng: torch.Generator | None) -> Iterator[torch.Tensor]:
    order = torch.randperm(n, generator=rng) if rng is not None else torch.arange(n)
    for i in range(0, n, size):
        yield order[i : i + size]


@torch.no_grad()
def accuracy(
    predict: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    batch: int = 500,
) -> float:
    correct = sum(
        int((predict(x[i : i + batch]).argmax(1) == y[i : i + batch]).sum())
        for i in range(0, len(y), batch)
    )
    return correct / len(y)


@torch.no_grad()
def ms_per_image(fn: Callable[[int], Any], batch: int, repeats: int = 20) -> float:
    """Median wall time of fn(batch) divided by batch, in milliseconds."""
    fn(batch)  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn(batch)
        times.append(time.perf_counter() - t)
    times.sort()
    return 1000 * times[len(times) // 2] / batch


def command_line() -> str:
    return "latentfuzz " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def stamp() -> dict[str, Any]:
    return {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
    }
