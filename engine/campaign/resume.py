"""Resume a crashed or interrupted campaign: from its checkpoint, replaying what follows it.

While a campaign runs, its search state is checkpointed once the store holds the
generation it matches (engine/campaign/checkpoint.py). A resume restores that state and
goes on from there; the store's generations after it (a checkpoint is written at most
every few seconds, so it can be a little behind) are run again through ``ReplayWriter``,
which drops what the store already holds, checking on the way that each replayed
generation's best fitness equals the stored one (refused if models or libraries changed).
From there on rows are written as usual. Images are rewritten identically, so files that
a kill left unwritten come back. The store holds whole generations only (a generation's
rows are pending together and written in one transaction), so "the last committed
generation" is one number for the whole campaign.

Without a usable checkpoint (a store written before checkpoints, a file from another
config, models or libraries, an unreadable one) the search is replayed from the start:
a campaign's results depend only on its config and seed (every draw comes from one
torch.Generator), so the replay reaches the same state, at the cost of its compute.
`recompute_metrics` (`doctor --fix`) always replays the whole search: a finished campaign
keeps no checkpoint.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.campaign import checkpoint
from engine.campaign.config import from_record
from engine.campaign.evaluator import Evaluator
from engine.campaign.loop import Progress
from engine.campaign.resolve import Resolved, resolve
from engine.campaign.runner import CampaignResult, execute
from engine.campaign.startup import ReplayReport
from engine.classifiers import inference
from engine.core.errors import ConfigError, LatentfuzzError
from engine.core.home import db_path
from store import CampaignWriter, Store, interrupts, recovery
from store import campaigns as sc
from store.campaigns import reap
from store.liveness import RESUMABLE, CampaignLock
from store.maintenance import require_sound


@dataclass
class Committed:
    """What the store holds of a campaign: its seed rows or not, the last whole generation,
    and each stored generation's best fitness for the replay check."""

    seeds: bool
    last: int
    best: dict[tuple[int, int], float]

    @classmethod
    def load(cls, store: Store, cid: str) -> Committed:
        n = sc.seed_count(store, cid)
        g = sc.best_fitness_of(store, [cid])
        best = {
            (int(s), int(k)): float(f)
            for s, k, f in zip(g["seed_idx"], g["generation"], g["best_fitness"], strict=True)
        }
        return cls(bool(n), int(g["generation"].max()) if len(g) else 0, best)


class ReplayWriter:
    """Stands between the search and its CampaignWriter while a campaign is replayed: rows
    the store holds already are checked and dropped, the rest go through."""

    def __init__(
        self, writer: CampaignWriter, committed: Committed, report: ReplayReport | None = None
    ) -> None:
        self.w, self.c, self.report = writer, committed, report
        self.g = 0  # the generation being recorded (its generations rows come first)

    def batch(self) -> contextlib.AbstractContextManager[None]:
        return self.w.batch()

    def maybe_flush(self) -> None:
        self.w.maybe_flush()

    def append(self, table: str, **columns: Any) -> None:
        if table == "seeds" or (table == "images" and columns.get("kind") == "seed"):
            if self.c.seeds:
                return
        elif table == "generations":
            self.g = int(columns["generation"])
            if self.report is not None:
                self.report.at(self.g)
            if self.g <= self.c.last:
                self._check(columns)
                return
        elif self.g <= self.c.last:  # individuals, result images of this generation
            return
        self.w.append(table, **columns)

    def update_seeds(self, **columns: Any) -> None:
        if self.g > self.c.last:
            self.w.update_seeds(**columns)

    def _check(self, columns: dict[str, Any]) -> None:
        for s, f in zip(
            np.atleast_1d(columns["seed_idx"]), np.atleast_1d(columns["best_fitness"]), strict=True
        ):
            stored = self.c.best.get((int(s), self.g))
            if stored is None or stored != float(f):
                raise ConfigError(
                    f"cannot resume: replaying generation {self.g} of seed {int(s)} gives best "
                    f"fitness {float(f)!r}, the store holds {stored!r}; the models, libraries "
                    "or thread count differ from the campaign's run. Start a new campaign"
                )


@contextlib.contextmanager
def _released_on_error(lock: CampaignLock) -> Iterator[None]:
    try:
        yield
    except BaseException:
        lock.release()
        raise


def _replayable(c: dict[str, Any], models_root: Path | None) -> Resolved:
    """The campaign row `c` resolved for a replay; refused when a replay cannot reach the
    state it had (a wall-clock budget, other models)."""
    cid = c["id"]
    r = resolve(from_record(c["config"]), models_root)
    if (why := r.strategy.termination().unreplayable()) is not None:
        raise LatentfuzzError(
            f"campaign {cid} has {why}: how far it got depends on the machine, so it "
            "cannot be replayed to the same state; start a new campaign"
        )
    if r.model_hashes != c["environment"].get("model_sha256"):
        raise ConfigError(
            f"campaign {cid} ran with models {c['environment'].get('model_sha256')}, now "
            f"{r.model_hashes}; a resumed run would not match. Start a new campaign"
        )
    return r


def _eager(c: dict[str, Any]) -> contextlib.AbstractContextManager[None]:
    """A campaign of the eager way replays eagerly: graphs differ in the logits' last bits."""
    eager = int(c["environment"].get("inference", 1)) < inference.GRAPHS
    return inference.eager_only() if eager else contextlib.nullcontext()


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _first_new(
    progress: Callable[[Progress], None] | None, last: int
) -> Callable[[Progress], None] | None:
    """`progress`, stamping $LATENTFUZZ_FIRST_GENERATION_FILE at the first generation the
    store did not hold (`latentfuzz bench` times a resume's start-up by it, as a run's)."""
    stamp = os.environ.get("LATENTFUZZ_FIRST_GENERATION_FILE")
    if not stamp:
        return progress

    def on_progress(p: Progress) -> None:
        nonlocal stamp
        if stamp and p.generation > last:
            Path(stamp).write_text(repr(time.time()))
            stamp = None
        if progress is not None:
            progress(p)

    return on_progress


def resume_campaign(
    home: Path,
    cid: str,
    progress: Callable[[Progress], None] | None = None,
    models_root: Path | None = None,
    evaluator: type[Evaluator] | None = None,
    notify: Callable[[str], None] = _stderr,
) -> CampaignResult:
    """Continue a crashed or interrupted campaign to the end it would have had. `notify`
    hears why a checkpoint was not used (the resume then replays the whole search)."""
    store = Store(db_path(home))
    store.require_writable()
    require_sound(store)
    recovery.ingest(store)
    reap(store)
    c = sc.campaign(store, cid)
    if c is None:
        raise LatentfuzzError(f"no campaign {cid!r}; `latentfuzz campaigns` lists them")
    if c["status"] not in RESUMABLE:
        hint = "; stop it first" if c["status"] == "running" else ""
        raise LatentfuzzError(
            f"campaign {cid} is {c['status']}; only {' or '.join(RESUMABLE)} campaigns can "
            f"be resumed{hint}"
        )
    r = _replayable(c, models_root)
    # A Ctrl-C deferred while the models loaded stops here, before the row is touched.
    interrupts.checkpoint()
    lock = CampaignLock(home, cid).acquire()
    with _released_on_error(lock):
        committed = Committed.load(store, cid)
        saved, why = checkpoint.load(home, cid, r, committed.last)
        # Before the campaign reads as running: a page must not take an earlier resume's
        # report for this one's.
        report = ReplayReport(home, cid, committed.last, saved.generation if saved else 0)

    def fallback(why: str) -> None:
        report.restart(0)
        notify(f"campaign {cid}: {why}; replaying its search from the start")

    if why is not None:
        notify(f"campaign {cid}: {why}; replaying its search from the start")
    try:
        with _released_on_error(lock), store.write() as con:
            sc.mark_resumed(con, cid, os.getpid())
        with _eager(c):
            return execute(
                r,
                store,
                home,
                cid,
                lock,
                time.perf_counter(),
                _first_new(progress, committed.last),
                evaluator,
                wrap=lambda w: ReplayWriter(w, committed, report),
                evaluations_before=int(c.get("evaluations") or 0),
                saved=saved,
                fallback=fallback,
            )
    finally:
        # Read only while the campaign runs (it stayed in the home for good), also when the
        # resume failed before it began.
        report.remove()


#: The campaign row's closing fields that a replay for the metrics leaves as they were.
KEPT = ("finished_at", "wall_seconds", "evaluations", "store_seconds")


def _plain(v: Any) -> Any:
    """A pandas cell as a value DuckDB binds: NaN and NaT as NULL, numpy and pandas scalars
    as Python's."""
    if v is None or v != v:  # NaN and NaT are not equal to themselves
        return None
    if hasattr(v, "to_pydatetime"):
        return v.to_pydatetime()
    return v.item() if hasattr(v, "item") else v


def recompute_metrics(home: Path, cid: str, models_root: Path | None = None) -> dict[str, Any]:
    """Write the metrics of a finished campaign that has none (`latentfuzz doctor --fix`):
    its search is replayed against its rows, as `resume` does (each generation checked
    against the stored one, nothing written again), and closed by the close's own code,
    which commits the metrics with the campaign row's own status, time and end. Returns
    the metrics row."""
    store = Store(db_path(home))
    store.require_writable()
    c = sc.campaign(store, cid)
    if c is None or c["status"] != "finished":
        got = "absent" if c is None else c["status"]
        raise LatentfuzzError(
            f"campaign {cid} is {got}; only a finished campaign's metrics are recomputed "
            "(`latentfuzz resume` closes a crashed or interrupted one with its metrics)"
        )
    r = _replayable(c, models_root)
    lock = CampaignLock(home, cid).acquire()
    with _released_on_error(lock):
        committed = Committed.load(store, cid)
    with _eager(c):
        res = execute(
            r,
            store,
            home,
            cid,
            lock,
            time.perf_counter(),
            wrap=lambda w: ReplayWriter(w, committed),
            evaluations_before=int(c.get("evaluations") or 0),
            kept={k: _plain(c.get(k)) for k in KEPT},
            checkpointing=False,
        )
    if res.status != "finished":
        raise LatentfuzzError(
            f"campaign {cid}: the replay for its metrics ended {res.status}; "
            f"`latentfuzz resume {cid}` finishes it"
        )
    # Deferred (start-up time: loads pandas).
    from store.metrics import metrics

    return metrics(store, cid)
