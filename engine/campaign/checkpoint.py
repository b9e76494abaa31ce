"""Checkpoints of a campaign's search state, so that `resume` goes on where the store ends.

After a generation's rows are recorded, the state of everything the rest of the search
reads is captured (copied) now and then: the strategy's (``Strategy.state_dict``), the
termination's, the campaign's own per-seed tensors, the metrics tracker, the failure
archive, the image sink's open strips, the evaluator's batch sizes and the campaign's
random generator. The capture is written to ``campaigns/<id>/checkpoint.pt`` (a temp
file, then ``os.replace``) only once the store has committed that generation's rows, by
the thread that committed them, and only once the images queued before it are on disk.
So after a kill -9 at any instant the file is whole and never ahead of the store: it
matches the last committed generation or one before it, and `resume` restores it, then
replays the few committed generations after it (engine/campaign/resume.py's
ReplayWriter, which checks them against the store).

Where it lives, and why not in the store: a 1,000-seed DM campaign's state is tens of MB,
which a BLOB in every flush's transaction would rewrite into DuckDB each time. A file
outside the store, written at most every `flush_seconds` and kept under SHARE of the
campaign's time, costs little; a missing, unreadable or mismatched one (another config,
other models or libraries, a store written before checkpoints) falls back to replaying
the whole search. It is read with ``torch.load(weights_only=True)`` (tensors, numbers,
strings and containers only), is never exported in a bundle nor accepted from one, and is
removed when the campaign finishes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from engine.campaign.metrics import MetricsTracker
from engine.campaign.resolve import Resolved
from engine.classifiers import inference
from engine.core.errors import cause
from engine.search.archive import Archive
from store import CampaignWriter
from store.admin import checkpoint_path

if TYPE_CHECKING:  # the loop imports this module
    from engine.campaign.loop import Campaign

#: Bumped when the saved layout changes: an older file is then replayed past, not read.
FORMAT = 1
#: The captures' and writes' share of the campaign's time that they are spaced to stay
#: under, as the store's writes are (store/writer.py: STORE_SHARE): a 1,000-seed VAE
#: campaign's state is about 80 MB, whose copy and write take a few tenths of a second.
SHARE = 0.02
#: Flush periods after which a capture is made whenever the next flush is.
STALE = 30
#: The Campaign's own fields that the rest of the search reads.
CAMPAIGN_FIELDS = (
    "labels",
    "targets",
    "active",
    "n_viable",
    "seed_latents",
    "best_so_far",
    "evals",
    "first_failure",
    "n_failed",
    "strategy_seconds",
)


def fingerprint(r: Resolved) -> str:
    """What must not change between the run that wrote a checkpoint and the resume that
    reads it: the config, the strategy's params, the models and what computes with them.
    The config as resolved: a run's own holds the settings it was given, the stored one
    that a resume resolves holds every default spelled out."""
    given = ("fitness", "criterion", "archive", "strategy_params", "generator_params")
    config = r.config.model_dump(mode="json")
    what = {
        "config": {k: v for k, v in config.items() if k not in given},
        "resolved": [r.fitness.name, r.criterion.name, r.archive, r.generator.options()],
        "params": r.strategy.params.model_dump(mode="json"),
        "strategy": r.strategy.name,
        "models": r.model_hashes,
        "torch": torch.__version__,
        "numpy": version("numpy"),
        "threads": torch.get_num_threads(),
        "inference": [inference.PATH, inference.eager_forced()],
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()


def _copy(x: Any) -> Any:
    """A deep copy that weights_only loading reads back: tensors cloned, numpy arrays
    as tensors, numpy scalars as Python's; a set or an object is refused (TypeError)."""
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    if isinstance(x, np.ndarray):
        return torch.from_numpy(np.array(x))
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, dict):
        return {k: _copy(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return type(x)(_copy(v) for v in x)
    if x is None or isinstance(x, bool | int | float | str):
        return x
    raise TypeError(f"a checkpoint cannot hold a {type(x).__name__}")


def capture(c: Campaign, g: int, done: torch.Tensor) -> dict[str, Any]:
    """The state after generation `g`'s rows were recorded, `done` its seeds that stop."""
    return _copy(
        {
            "generation": g,
            "done": done,
            "rng": c.rng.get_state(),
            "campaign": {name: getattr(c, name) for name in CAMPAIGN_FIELDS},
            "strategy": c.strategy.state_dict(),
            "termination": c.termination.state_dict(),
            "metrics": c.metrics.state_dict(),
            "archive": None if c.archive is None else c.archive.state_dict(),
            "sink": c.sink.state_dict(),
            "evaluator": c.evaluate.state_dict(),
        }
    )


@dataclass
class Saved:
    """A checkpoint read back and checked against the campaign; `state` as captured."""

    generation: int
    state: dict[str, Any]


def load(home: Path, cid: str, r: Resolved, last: int) -> tuple[Saved | None, str | None]:
    """The campaign's checkpoint if it can be used, else None and why (None: there is none,
    as in a store written before checkpoints). `last`: the store's last whole generation."""
    path = checkpoint_path(home, cid)
    if not path.is_file():
        return None, None
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any unreadable file is replayed past alike
        return None, f"its checkpoint is unreadable ({cause(e, limit=120)})"
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("campaign") != cid:
        return None, "its checkpoint is of another format or campaign"
    if data.get("fingerprint") != fingerprint(r):
        return None, "its checkpoint was written with another config, models or libraries"
    g = data.get("generation")
    if not isinstance(g, int) or not 1 <= g <= last:
        return None, f"its checkpoint's generation {g!r} is not among the store's 1 to {last}"
    return Saved(g, data["state"]), None


class Checkpoints:
    """Captures a running campaign's state and writes it once the store holds it; restores
    a Saved one in place of drawing the seeds (Campaign.run's hooks)."""

    def __init__(
        self,
        home: Path,
        cid: str,
        r: Resolved,
        writer: CampaignWriter,
        saved: Saved | None = None,
        fallback: Callable[[str], None] | None = None,
    ) -> None:
        self.path, self.cid, self.writer = checkpoint_path(home, cid), cid, writer
        self.fingerprint = fingerprint(r)
        self.min_seconds = r.config.flush_seconds
        self.saved, self.fallback = saved, fallback
        self.enabled = True
        #: The capture waiting for its generation's commit: (batch, generation, state, images).
        self._waiting: tuple[int, int, dict[str, Any], Future] | None = None
        self._lock = threading.Lock()
        self.cost = 0.0  # seconds captures and writes took, all threads
        self.started, self.last = time.monotonic(), float("-inf")
        #: The last generation's length, and when it ended.
        self.generation_seconds, self._generation_end = 0.0, self.started
        #: Generations written, in order (tests count them).
        self.written: list[int] = []
        writer.on_commit.append(self._on_commit)

    def due(self) -> bool:
        """One capture at a time (the last is not in the store yet), at most every
        `flush_seconds`, under SHARE of the time, and at the end of the last generation
        before the store's next flush (judged by the last generation's length): that
        flush commits it at once, so the file is at most about a generation behind the
        store. (Captured just after a flush, it waited a whole flush interval, up to 10 s
        of search on a busy machine, for the next one; a kill then left that much to
        replay.) Should the guess keep missing, a capture is made anyway after
        STALE flush periods."""
        now = time.monotonic()
        return (
            self._waiting is None
            and now - self.last >= self.min_seconds
            and self.cost <= SHARE * (now - self.started)
            and (
                self.writer.next_flush_in() <= self.generation_seconds
                or now - self.last >= STALE * self.min_seconds
            )
        )

    def generation_done(self, c: Campaign, g: int, done: torch.Tensor) -> None:
        """Called right after generation `g`'s rows are recorded (a batch closed)."""
        now = time.monotonic()
        self.generation_seconds, self._generation_end = now - self._generation_end, now
        if not self.enabled or not self.due():
            return
        t = time.perf_counter()
        try:
            state = capture(c, g, done)
        except Exception:  # noqa: BLE001 - a checkpoint never fails the campaign
            # A strategy without a state_dict (NotImplementedError), or a state that
            # cannot be saved: this campaign resumes by replay, as before checkpoints.
            self.enabled = False
            return
        with self._lock:
            self._waiting = (self.writer.batches, g, state, c.sink.barrier())
        self.last = time.monotonic()
        self.cost += time.perf_counter() - t

    def _on_commit(self, committed: int) -> None:
        """The store holds batches up to `committed`: write the waiting capture if its
        generation is among them (on the writer's thread, or at the close)."""
        with self._lock:
            w = self._waiting
            if w is None or w[0] > committed or not self.enabled:
                return
            self._waiting = None
        t = time.perf_counter()
        _, g, state, images = w
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            images.result()  # every image of generations up to g is on disk first
            data = {
                "format": FORMAT,
                "campaign": self.cid,
                "fingerprint": self.fingerprint,
                "generation": g,
                "state": state,
            }
            torch.save(data, tmp)
            os.replace(tmp, self.path)
            self.written.append(g)
        except Exception:  # noqa: BLE001 - a checkpoint that fails (a full disk) costs a replay
            self.enabled = False
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        self.cost += time.perf_counter() - t

    def stop(self) -> None:
        """No more writes (a finished campaign's close)."""
        with self._lock:
            self.enabled, self._waiting = False, None

    def remove(self) -> None:
        """A finished campaign needs none: its resume is refused, its metrics replayed."""
        self.stop()
        for p in (self.path, self.path.with_name(self.path.name + ".tmp")):
            p.unlink(missing_ok=True)

    def restore(self, c: Campaign) -> Saved | None:
        """Put the campaign where the Saved checkpoint left it, in place of drawing seeds
        and starting the strategy; None (the search starts from scratch, and the resume
        replays it) when there is none or it does not fit."""
        saved, self.saved = self.saved, None
        if saved is None:
            return None
        try:
            self._restore(c, saved.state)
        except Exception as e:  # noqa: BLE001 - whatever does not fit is replayed past
            self._reset(c)
            if self.fallback is not None:
                self.fallback(f"its checkpoint does not fit the campaign ({cause(e, limit=120)})")
            return None
        return saved

    def _restore(self, c: Campaign, s: dict[str, Any]) -> None:
        # The files first: the one part that can fail half-way, and a full replay writes
        # every strip afresh anyway.
        frame = tuple(int(x) for x in s["metrics"]["seed_images"].shape[1:])
        c.sink.load_state_dict(s["sink"], frame)
        for name, value in s["campaign"].items():
            setattr(c, name, value)
        c.metrics = MetricsTracker.from_state(s["metrics"])
        if c.archive is not None:
            if s["archive"] is None:
                raise ValueError("the checkpoint has no archive state")
            c.archive.load_state_dict(s["archive"])
        c.evaluate.load_state_dict(s["evaluator"])
        c.strategy.attach(c.r, c.labels[c.active])
        c.strategy.load_state_dict(s["strategy"])
        held = len(c.strategy.state().step)
        if held != len(c.active):
            raise ValueError(f"the strategy holds {held} seeds, the campaign {len(c.active)}")
        c.rng.set_state(s["rng"])

    def _reset(self, c: Campaign) -> None:
        """Back to a campaign about to draw its seeds (a restore that failed part-way)."""
        c.rng.manual_seed(c.cfg.seed)
        c.sink._count, c.sink._pending = {}, {}
        c.evaluate.batch_sizes = []
        if c.archive is not None:
            c.archive = Archive(c.cid, c.writer, c.sink)
