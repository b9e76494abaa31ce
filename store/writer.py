"""Batched, append-mostly writes for one campaign.

The runner hands over columns (numpy arrays or scalars) per table per generation; the
writer keeps them and, on its own thread, writes everything pending every
``flush_seconds`` as one Arrow table per table in a single short transaction. The search
never waits for the disk or for a reader's lock: if another process holds the file, the
batch stays pending until the next flush. ``finish`` stops the thread and writes the rest.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from store import interrupts, recovery
from store.connection import Store
from store.errors import StoreBusy
from store.locks import holders
from store.metrics import metrics_frame, put_metrics
from store.tables import (
    SEED_UPDATE_COLS,
    Columns,
    apply_seed_updates,
    arrow,
    columns,
    frame,
    insert_table,
)

TABLES = ("seeds", "generations", "individuals", "images", "archive")
#: The store's share of a campaign's time that flushes are spaced to stay under.
STORE_SHARE = 0.025
#: ...but flushes are at most this many `flush_seconds` apart, however long they take: a
#: reader's view of a running campaign is never older than that (10 s by default).
MAX_SPACING = 5
#: A flush that found the store busy (a reader in it) is tried again this soon, not a
#: whole period later; one due for MAX_SPACING periods waits up to a period for the store.
#: A reader polling every 50 ms left the writer gaps too short for its 50 ms try every 2 s:
#: a 10 s campaign showed no row until its end.
RETRY_SECONDS = 0.2


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def create_campaign(store: Store, row: dict[str, Any]) -> None:
    """Insert the campaign row (status 'running'); config and environment as JSON."""
    row = {
        **row,
        "config": json.dumps(row["config"]),
        "environment": json.dumps(row["environment"]),
    }
    # Bound parameters, not an Arrow frame: pyarrow imports pandas (0.3 s), and this row
    # is on every campaign's path to its first generation.
    cols = ", ".join(row)
    marks = ", ".join("?" * len(row))
    with store.write() as con:
        con.execute(f"INSERT INTO campaigns ({cols}) VALUES ({marks})", list(row.values()))


def campaign_exists(con, campaign_id: str) -> bool:
    """Whether a campaign row has this id, on an open connection (a bare query: pandas
    would cost 0.3 s of every campaign's start-up)."""
    return con.execute("SELECT 1 FROM campaigns WHERE id = ?", [campaign_id]).fetchone() is not None


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class CampaignWriter:
    def __init__(
        self,
        store: Store,
        campaign_id: str,
        flush_seconds: float = 2.0,
        background: bool = True,
        notify: Callable[[str], None] = _stderr,
    ) -> None:
        self.store = store
        #: Where "waiting for the store" messages go (stderr by default).
        self.notify = notify
        self.campaign_id = campaign_id
        self.flush_seconds = flush_seconds
        self._pending: dict[str, list[Columns]] = {t: [] for t in TABLES}
        self._seed_updates: list[Columns] = []
        #: Appends and updates of the open batch() block, moved to pending when it ends.
        self._staged: tuple[dict[str, list[Columns]], list[Columns]] | None = None
        self._lock = threading.RLock()
        self._stop = threading.Event()
        #: Set to flush before the period is up: the first generation, and stopping.
        self._wake = threading.Event()
        self._first_tried = False
        #: Whether a generation's rows are in the store yet: until then every flush comes
        #: early and unpaced (a campaign's seed rows come in a batch of their own first).
        self._generations_landed = False
        #: The early first flush's seconds, left out of the pacing (below).
        self._unpaced = 0.0
        self._error: BaseException | None = None
        #: Wall seconds spent inside the store (any thread), for benchmarks and the contract.
        self.seconds = 0.0
        self.last_flush_seconds = 0.0
        self.flushes = 0
        self._last = self._started = self._landed = time.monotonic()
        self._interval = flush_seconds
        #: Generations (batch() blocks) closed, and how many of them the store holds: a
        #: checkpoint of the search state is written only once its batch is committed
        #: (engine/campaign/checkpoint.py), so it never runs ahead of the store.
        self.batches = 0
        self.committed = 0
        #: Called with `committed` after each write that landed, on the writing thread.
        self.on_commit: list[Callable[[int], None]] = []
        self._thread = None
        if background:
            self._thread = threading.Thread(target=self._loop, name="store-writer", daemon=True)
            self._thread.start()

    def append(self, table: str, **columns: Any) -> None:
        """Queue rows: 1-d arrays of equal length, plus scalars repeated on every row.
        The campaign id is added by the writer."""
        self._raise_pending_error()
        if table not in TABLES:
            raise ValueError(f"unknown table {table!r}; expected one of {TABLES}")
        # Copy now: callers hand over views of tensors they may change before the flush.
        columns = {k: np.array(v) if isinstance(v, np.ndarray) else v for k, v in columns.items()}
        with self._lock:
            (self._staged or (self._pending, None))[0][table].append(columns)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Appends inside the block go to the store in the same flush (one generation), or
        not at all when the block is interrupted (Ctrl-C half-way through recording a
        generation): the store only ever holds whole generations, which resume relies on."""
        with self._lock:
            if self._staged is not None:  # nested: the outer block decides
                yield
                return
            self._staged = ({t: [] for t in TABLES}, [])
            try:
                yield
                for t, chunks in self._staged[0].items():
                    self._pending[t].extend(chunks)
                self._seed_updates.extend(self._staged[1])
                self.batches += 1
                # Up to the first generation, each batch goes to the store at once (the seed
                # rows' batch comes first), not a period later: a campaign launched from the
                # dashboard shows its first generation that much sooner.
                if not self._generations_landed:
                    self._wake.set()
            finally:
                self._staged = None

    def update_seeds(self, **columns: Any) -> None:
        """Final per-seed outcomes: seed_idx plus columns among SEED_UPDATE_COLS."""
        unknown = set(columns) - {"seed_idx", *SEED_UPDATE_COLS}
        if unknown:
            raise ValueError(f"cannot update seed columns {sorted(unknown)}")
        columns = {k: np.array(v) if isinstance(v, np.ndarray) else v for k, v in columns.items()}
        with self._lock:
            (self._staged or (None, self._seed_updates))[1].append(columns)

    def next_flush_in(self) -> float:
        """Seconds until the next flush is due (negative: overdue): a checkpoint captured
        just before it is committed, and so written, at once."""
        return self._last + self._interval - time.monotonic()

    def maybe_flush(self) -> None:
        """Without a background thread: flush when due, never waiting for a lock."""
        self._raise_pending_error()
        first = self.batches > 0 and not self._first_tried
        if self._thread is None and (first or time.monotonic() - self._last >= self._interval):
            self._first_tried = self._first_tried or first  # tried once; then by the period
            self.flush(block=False)

    def _loop(self) -> None:
        while True:
            self._wake.wait(self._interval)
            if self._stop.is_set():
                return
            self._wake.clear()
            try:
                self.flush(block=False)
            except BaseException as e:  # surfaced on the search thread's next append
                self._error = e
                return

    def _raise_pending_error(self) -> None:
        if self._error is not None:
            raise RuntimeError(f"the store writer failed: {self._error}") from self._error

    def flush(self, block: bool = True) -> bool:
        """Write everything pending in one transaction. Returns False if it must wait."""
        with self._lock:
            pending, updates = self._pending, self._seed_updates
            self._pending, self._seed_updates = {t: [] for t in TABLES}, []
            upto = self.batches
            # Up to the first generation's rows, flushes come early and unpaced: paced, the
            # seed rows' flush a moment into the campaign spaced the next one MAX_SPACING
            # periods out, and a 6 s campaign showed no generation until its end.
            early = upto > 0 and not self._generations_landed
            generations = bool(pending["generations"])
        if not any(pending.values()) and not updates:
            self._committed(upto)
            return True
        t0 = time.perf_counter()
        stale = time.monotonic() - self._landed >= MAX_SPACING * self.flush_seconds
        wait = None if block else self.flush_seconds if stale else 0.05
        busy = False
        try:
            with self.store.write(timeout=wait) as con:
                self._write(con, pending, updates)
            self._landed = time.monotonic()
            self._generations_landed = self._generations_landed or generations
        except BaseException as e:
            # Nothing was written (the transaction rolled back): put the rows back in front.
            with self._lock:
                for t in TABLES:
                    self._pending[t][:0] = pending[t]
                self._seed_updates[:0] = updates
            if isinstance(e, StoreBusy) and not block:
                busy = True
                return False
            raise
        finally:
            spent = self.last_flush_seconds = time.perf_counter() - t0
            self.seconds += spent
            self._last = time.monotonic()
            # Every flush pays a fixed 10 to 50 ms (attach, commit, checkpoint on detach)
            # plus its rows, more on a loaded machine: the next one waits until the writer's
            # time so far (the campaign row included), with the next flush counted at this
            # one's cost, is under STORE_SHARE of the campaign's, so the search keeps at
            # least 97.5% of the machine. Counting only the flushes made let each flush
            # overshoot by its own cost: 3.2% at 100 seeds on a busy machine. On a quiet
            # machine this is every `flush_seconds` (a flush of 25 ms every 2 s is 1.3%).
            # Never more than MAX_SPACING flush periods apart, though: a live view
            # whose progress froze for 15 s on a busy machine looked broken.
            elapsed = self._last - self._started
            if early:
                # The first generation's flush comes early (a launched campaign shows it
                # at once) and seconds into the campaign: paced like the rest, its cost
                # over so short a time spaced the next ones up to MAX_SPACING periods
                # apart, and a watched campaign's progress stood still (0d147a4, reverted).
                self._unpaced += spent
                self._interval = self.flush_seconds
            else:
                due = (self.seconds - self._unpaced + spent) / STORE_SHARE - elapsed
                self._interval = min(max(self.flush_seconds, due), MAX_SPACING * self.flush_seconds)
            if busy:
                self._interval = RETRY_SECONDS
        self.flushes += 1
        self._committed(upto)
        return True

    def _committed(self, upto: int) -> None:
        if upto > self.committed:
            self.committed = upto
            for hook in self.on_commit:
                hook(upto)

    def _write(self, con, pending: dict[str, list[Columns]], updates: list[Columns]) -> None:
        for table, chunks in pending.items():
            if chunks:
                insert_table(con, table, columns(chunks), self.campaign_id)
        if updates:
            apply_seed_updates(con, columns(updates), self.campaign_id)

    def close(self) -> None:
        """Stop the background thread (the pending rows stay pending)."""
        if self._thread is not None:
            self._stop.set()
            self._wake.set()
            self._thread.join()
            self._thread = None

    def finish(
        self,
        status: str,
        fields: dict[str, Any] | None = None,
        error: str | None = None,
        metrics: dict[str, Any] | None = None,
    ) -> None:
        """Stop the thread, then write the rest and mark the campaign in one transaction
        (and checkpoint), so a reader sees either the running or the finished campaign.
        `metrics` (a finished campaign's row, store/metrics.py) goes into that transaction:
        a kill between two writes left `finished` campaigns without metrics, which `resume`
        refused (5 kills of 20)."""
        self.close()
        table = None if metrics is None else metrics_frame(metrics)
        t0 = time.perf_counter()
        with self._lock:
            pending, updates = self._pending, self._seed_updates
            self._pending, self._seed_updates = {t: [] for t in TABLES}, []
            upto = self.batches
        cols = {"status": status, "finished_at": now(), "error": error, **(fields or {})}
        sets = ", ".join(f"{k} = ?" for k in cols)

        def close_campaign(con) -> None:
            self._write(con, pending, updates)
            if status in ("interrupted", "failed"):
                con.execute(
                    "UPDATE seeds SET status = 'interrupted' WHERE campaign_id = ? "
                    "AND status = 'searching'",
                    [self.campaign_id],
                )
            if table is not None:
                put_metrics(con, self.campaign_id, table)
            con.execute(
                f"UPDATE campaigns SET {sets} WHERE id = ?", [*cols.values(), self.campaign_id]
            )

        try:
            with interrupts.giving_way():
                self._write_until_it_lands(close_campaign)
        except KeyboardInterrupt:
            self._save_recovery(pending, updates, cols, table)
            raise
        except Exception:
            if interrupts.forced() is None:
                raise
            # A second Ctrl-C inside a query, which DuckDB turns into an error of its own:
            # the transaction rolled back, so the rows are saved as for the first kind.
            self._save_recovery(pending, updates, cols, table)
            raise KeyboardInterrupt from None
        self.seconds += time.perf_counter() - t0
        self._committed(upto)

    def _write_until_it_lands(self, block: Callable) -> None:
        """The final write never gives up (CONTRACT rule 4): while another process holds the
        store, wait (backoff up to 5 s between tries, each try as long as the store's
        timeout) and say for whom, until the rows land or the user interrupts."""
        delay, told = 0.1, None
        while True:
            try:
                with self.store.write(checkpoint=True) as con:
                    block(con)
                if told is not None:
                    self.notify("the store is free again; the campaign's last rows are written")
                return
            except StoreBusy:
                pids = holders(self.store.path)
                who = (
                    f"held by pid {', '.join(map(str, pids))}"
                    if pids
                    else "held by another process"
                )
                msg = (
                    f"waiting for the store ({who}) to write the campaign's last rows; "
                    "Ctrl-C saves them to a recovery file instead"
                )
                if msg != told:
                    self.notify(msg)
                    told = msg
                interrupts.pause(delay)  # a Ctrl-C held back by the close ends the wait
                delay = min(delay * 2, 5.0)

    def _save_recovery(self, pending, updates, cols, metrics=None) -> None:
        tables = {t: frame(chunks) for t, chunks in pending.items() if chunks}
        if metrics is not None:  # ingested with the status, in one transaction as here
            tables["campaign_metrics"] = arrow(metrics)
        path = recovery.save(
            Path(self.store.path).parent,
            self.campaign_id,
            tables,
            frame(updates) if updates else None,
            cols,
        )
        self.notify(
            f"the campaign's last rows are saved in {path}; the next latentfuzz "
            "command that opens this store writes them"
        )
