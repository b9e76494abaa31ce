"""One training run's loop: progress bar, Ctrl-C at a step boundary, device.

    run = TrainRun("train gan on cifar10", epochs, steps_per_epoch, device)
    with run:                       # Ctrl-C inside ends the block, not the program
        for epoch in run.epochs():
            for idx in batches(...):
                ...                 # one optimisation step
                run.step(loss=...)
    card["training"].update(run.record())   # interrupted, epochs and steps done, device

The first Ctrl-C only sets a flag; ``step`` raises KeyboardInterrupt at the end of the
step it lands in, so the weights kept are those of a whole step (an interrupt inside an
optimiser update or the EMA loop would keep half of one). A second Ctrl-C interrupts at
once, for a step that hangs.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import torch
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from engine.core.errors import LatentfuzzError


def resolve_device(name: str) -> torch.device:
    """A torch device that exists here, or a one-line error saying what to pass instead."""
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError):
        raise LatentfuzzError(
            f"--device {name!r} is not a torch device; expected cpu, cuda or cuda:N"
        ) from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise LatentfuzzError(
            f"--device {name}: no CUDA GPU is available here (torch {torch.__version__}, "
            "built for CPU or no driver); train with --device cpu"
        )
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise LatentfuzzError(
            f"--device {name}: this machine has {torch.cuda.device_count()} GPU(s), "
            f"cuda:0..cuda:{torch.cuda.device_count() - 1}"
        )
    if dev.type not in ("cpu", "cuda"):
        raise LatentfuzzError(f"--device {name}: training runs on cpu or cuda")
    return dev


def describe_device(dev: torch.device) -> str:
    """What the card records: 'cpu', or 'cuda (NVIDIA H100 ...)'."""
    if dev.type == "cuda":
        return f"{dev} ({torch.cuda.get_device_name(dev)})"
    return "cpu"


class TrainRun:
    """Progress, interruption and bookkeeping of one training run (see the module doc)."""

    #: Called after every step with the run; tests set it to interrupt at a known step.
    on_step: ClassVar[Callable[[TrainRun], None] | None] = None

    def __init__(
        self,
        what: str,
        epochs: int,
        steps_per_epoch: int,
        device: torch.device,
        console: Console | None = None,
    ) -> None:
        self.what, self.epochs_total, self.per_epoch = what, epochs, steps_per_epoch
        self.device = device
        self.console = console or Console(stderr=True)
        self.steps_done = 0
        self.interrupted = False
        self.seconds = 0.0
        self._stop = False
        self._previous: Any = None
        self._stats: dict[str, float] = {}

    @property
    def epochs_done(self) -> int:
        """Whole epochs behind the weights (every epoch has the same number of steps)."""
        return self.steps_done // max(self.per_epoch, 1)

    def epochs(self) -> Iterator[int]:
        for e in range(self.epochs_total):
            self._bar.update(self._task, description=f"epoch {e + 1}/{self.epochs_total}")
            yield e

    def step(self, **stats: float) -> None:
        """One optimisation step done; stats (loss, ...) are shown beside the bar."""
        self.steps_done += 1
        self._stats.update(stats)
        self._bar.update(self._task, advance=1, stats=self._line())
        if type(self).on_step is not None:
            type(self).on_step(self)
        if self._stop:
            raise KeyboardInterrupt

    def note(self, **stats: float) -> None:
        """Figures measured between steps (an epoch's test accuracy), shown beside the bar."""
        self._stats.update(stats)
        self._bar.update(self._task, stats=self._line())

    def _line(self) -> str:
        return "  ".join(f"{k} {v:.4g}" for k, v in self._stats.items())

    def _on_sigint(self, signum: int, frame: Any) -> None:
        if self._stop:  # the second Ctrl-C: now
            raise KeyboardInterrupt
        self._stop = True

    def __enter__(self) -> TrainRun:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        self._bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(bar_width=20),
            TextColumn("step"),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TimeElapsedColumn(),
            console=self.console,
        )
        # What is trained is said once; the bar keeps its width for the figures.
        self.console.print(self.what, markup=False, highlight=False, soft_wrap=True)
        self._bar.start()
        total = self.epochs_total * self.per_epoch
        self._task = self._bar.add_task("starting", total=total, stats="")
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: Any, tb: Any) -> bool:
        self.seconds = time.perf_counter() - self._t0
        self._bar.stop()
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
        if kind is KeyboardInterrupt:
            self.interrupted = True
            self.console.print(
                f"interrupted after {self.epochs_done} of {self.epochs_total} epochs "
                f"(step {self.steps_done} of {self.epochs_total * self.per_epoch}); keeping "
                "the weights of the last step",
                markup=False,
                highlight=False,
                soft_wrap=True,  # one line, however narrow the terminal
            )
            return True  # the caller goes on to write weights and card
        return False

    def record(self) -> dict[str, Any]:
        """The card's training fields about this run."""
        return {
            "device": describe_device(self.device),
            "interrupted": self.interrupted,
            "epochs_done": self.epochs_done,
            "steps_done": self.steps_done,
        }
