"""Whether other processes compete for this process's cores: the kernel's own accounting.

A batch-size sweep made while a neighbour takes one of two cores measures the neighbour,
not the model, and once picked batches of 32 where 256 runs 1.5 times as fast. The test
is the CPU time the cores this process may run on (``os.sched_getaffinity``) spent busy
over a window, from ``/proc/stat``, less this process's own (``os.times``, all its
threads): what is left is other processes' use, in cores. The machine is loaded for this
process when they use more than the cores its torch threads leave free, plus half a core
of slack for shells and daemons.

Why not the alternatives: the 1-minute load average trails a neighbour that started
seconds ago by most of a minute, and counts this process's own threads (a bench's
campaigns back to back read as "busy" on their own); a short reference workload timed
against a quiet one needs that quiet figure first, and the scheduler lets a task that
just woke run ahead of a busy neighbour for a few milliseconds, so a short workload can
read as quiet beside one. Counting the neighbour's CPU time needs neither. Where
``/proc/stat`` is missing (macOS), the load average less this process's threads stands
in for it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from engine.core import threads as threads_mod

#: Others' use (in cores) beyond the cores this process's threads leave free that still
#: counts as quiet: shells, editors and daemons take a few percent.
SLACK = 0.5


@dataclass(frozen=True)
class Sample:
    wall: float
    #: Busy seconds since boot of the cores this process may use; None without /proc/stat.
    busy: float | None
    #: This process's CPU seconds (user + system, every thread).
    own: float


def sample() -> Sample:
    t = os.times()
    return Sample(time.monotonic(), _busy_seconds(), t.user + t.system)


def others(a: Sample, b: Sample, threads: int) -> float | None:
    """Cores other processes kept busy between samples `a` and `b` (None: unknown), this
    process running `threads` threads."""
    wall = b.wall - a.wall
    if wall <= 0:
        return None
    if a.busy is None or b.busy is None:
        try:
            return max(0.0, os.getloadavg()[0] - threads)
        except (OSError, AttributeError):
            return None
    return max(0.0, ((b.busy - a.busy) - (b.own - a.own)) / wall)


def loaded(others_cores: float | None, threads: int, cores: int | None = None) -> bool:
    """Whether `others_cores` leave this process's `threads` fewer cores than they need."""
    if others_cores is None:
        return False  # unknown: as before this check, the sweep decides
    free = (cores if cores is not None else threads_mod.cores()[0]) - others_cores
    return free < threads - SLACK


def _busy_seconds() -> float | None:
    try:
        with open("/proc/stat", encoding="ascii") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    try:
        mine = os.sched_getaffinity(0)
    except AttributeError:
        mine = None
    ticks = 0
    for line in lines:
        if not (line.startswith("cpu") and line[3:4].isdigit()):
            continue
        name, *fields = line.split()
        if mine is not None and int(name[3:]) not in mine:
            continue
        # user nice system idle iowait irq softirq steal: all but idle and iowait are
        # time the core was not free for this process (steal: another virtual machine).
        v = [int(x) for x in fields[:8]]
        ticks += v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
    return ticks / os.sysconf("SC_CLK_TCK")


#: The shortest window `recent` measures over (100 ticks a second per core: 25 each),
#: and the longest gap it takes as one window (older use says nothing of now).
MIN_WINDOW_S = 0.25
MAX_WINDOW_S = 10.0
_mark = [sample()]  # the end of the last window: first, this module's import


def recent(threads: int) -> float | None:
    """Others' use in cores since the last call, or since this module was imported (a
    campaign's start-up: its imports and models loading), waiting for the rest of
    `MIN_WINDOW_S` if less has passed; a gap over `MAX_WINDOW_S` (a long-lived process)
    starts a fresh window."""
    now = sample()
    if now.wall - _mark[0].wall > MAX_WINDOW_S:
        _mark[0] = now
    if (wait := MIN_WINDOW_S - (now.wall - _mark[0].wall)) > 0:
        time.sleep(wait)
        now = sample()
    out = others(_mark[0], now, threads)
    _mark[0] = now
    return out
