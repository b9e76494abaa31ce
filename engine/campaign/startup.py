"""A dashboard-launched campaign's start-up steps, written where the page can read them.

Between Launch and the campaign's first row the process imports torch and loads the
models: 9 to 12 s with no sign of life on a busy machine. `latentfuzz run --id ID` (how
the dashboard launches) appends one line per step to `<home>/launch/<ID>.steps`:
`<seconds since the epoch>\\t<step>`. Stdlib only, so the first step is written before
the heavy imports it announces.
"""

from __future__ import annotations

import time
from pathlib import Path

#: The steps before the campaign's row exists, in order; the page shows them as a
#: checklist and a progress bar. The Campaign page takes over from the row on (seeds).
STEPS = ("importing torch and the engine", "loading the models and checking the config")


def steps_path(home: Path, campaign_id: str) -> Path:
    return Path(home) / "launch" / f"{campaign_id}.steps"


def report(home: Path, campaign_id: str | None, step: str) -> None:
    """Append `step` for a launched campaign; nothing for a campaign without a given id,
    and never an error (a read-only home only loses the report)."""
    if campaign_id is None:
        return
    try:
        path = steps_path(home, campaign_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as f:
            f.write(f"{time.time():.3f}\t{step}\n")
    except OSError:
        pass


def read(home: Path, campaign_id: str) -> list[tuple[float, str]]:
    """The steps reported so far, oldest first."""
    path = steps_path(home, campaign_id)
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        t, _, step = line.partition("\t")
        try:
            out.append((float(t), step))
        except ValueError:
            continue  # a line being written
    return out


def replay_path(home: Path, campaign_id: str) -> Path:
    return Path(home) / "launch" / f"{campaign_id}.replay"


class ReplayReport:
    """A resumed campaign's clock and replay position, for the Campaign page: the store's
    rows say neither (its created_at is the first start, and replayed generations write
    nothing). One small file, `<started> <replayed> <last> <start>`, replaced at most twice
    a second, so a reader never sees half of it. `start`: the generation the resume took
    up from its checkpoint (0: it replays from the first), so that the time left counts
    only the generations this process runs."""

    def __init__(self, home: Path, campaign_id: str, last: int, start: int = 0) -> None:
        self.path, self.last, self.start = replay_path(home, campaign_id), last, start
        self.started, self.written, self.done = time.time(), 0.0, False
        self.at(start)

    def restart(self, start: int) -> None:
        """The checkpoint did not fit: the replay starts at `start` after all."""
        self.start, self.done, self.written = start, False, 0.0
        self.at(start)

    def at(self, generation: int) -> None:
        """The replay has reached `generation`: written at the start, at the end of the
        replay, and at most every 0.5 s between; nothing after the end."""
        now = time.time()
        if self.done or (now - self.written < 0.5 and self.start < generation < self.last):
            return
        self.done = generation >= self.last
        self.written = now
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(self.path.name + ".tmp")
            at = min(generation, self.last)
            tmp.write_text(f"{self.started:.3f} {at} {self.last} {self.start}\n")
            tmp.replace(self.path)
        except OSError:
            pass  # a read-only home loses the report, not the campaign

    def remove(self) -> None:
        self.done = True  # a late at() must not write it again
        self.path.unlink(missing_ok=True)


def read_replay(home: Path, campaign_id: str) -> tuple[float, int, int, int] | None:
    """(resume time since the epoch, generations replayed, generations to replay, the
    generation the resume started from), or None for a campaign never resumed (or a
    report unreadable). A report of three fields (written before checkpoints) started
    from 0."""
    try:
        t, done, last, *start = replay_path(home, campaign_id).read_text().split()
        return float(t), int(done), int(last), int(start[0]) if start else 0
    except (OSError, ValueError, IndexError):
        return None
