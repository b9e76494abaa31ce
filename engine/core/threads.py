"""How many torch threads a campaign takes, and the OpenMP wait policy they wait with.

torch's CPU build runs its intra-op pool on GNU OpenMP (libgomp; MKL is linked with its GNU
threading layer, so it uses the same pool). libgomp's threads spin while they wait for work:
two pools of two threads on two cores, a campaign beside a grid worker or any CPU-bound
neighbour, starve each other, and a campaign ran 100x slower at batch 1 (issue 34). So:

- the entry point sets ``OMP_WAIT_POLICY=PASSIVE`` before torch is imported, unless the user
  set it (`set_wait_policy`); libgomp reads it once, when it loads. ``KMP_BLOCKTIME`` is
  Intel's and LLVM's runtime only: this build does not read it.
- a process takes floor(cores / sharers) threads, at least 1, where cores are the ones this
  process may run on (its affinity: a container's or taskset's share, not the machine's)
  and sharers are the grid's workers (`choose`). A plain `run` counts itself only: its
  results must not depend on what else happens to run, and a passive pool costs little
  beside a neighbour. ``--threads``, then ``$LATENTFUZZ_THREADS``, override the choice;
  an explicit ``$OMP_NUM_THREADS`` caps it.
- the inter-op pool (torch.jit's forks, which a campaign's models do not use) gets one
  thread: its default, one per core, only adds threads.

Stdlib only at import: the entry point imports it before torch.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import MutableMapping
from dataclasses import dataclass

from engine.core.errors import LatentfuzzError

WAIT_POLICY = "OMP_WAIT_POLICY"
THREADS_ENV = "LATENTFUZZ_THREADS"
#: More threads than this is a typo (a core count is in the hundreds at most).
MAX_THREADS = 4096
INTEROP_THREADS = 1


def set_wait_policy(environ: MutableMapping[str, str] | None = None) -> str:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` in `environ` (os.environ) unless it is set (any value
    is the user's, an empty one too); returns the policy in force. Before torch is imported,
    or libgomp has read it already; processes started after inherit it."""
    env = os.environ if environ is None else environ
    return env.setdefault(WAIT_POLICY, "PASSIVE")


def cores() -> tuple[int, str]:
    """(cores this process may run on, where that came from: 'affinity' or 'cpu_count')."""
    try:
        return max(1, len(os.sched_getaffinity(0))), "affinity"
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1), "cpu_count"


@dataclass(frozen=True)
class Choice:
    """A thread count and why: `source` is 'option', the env variable's name, or 'cores'."""

    threads: int
    source: str
    cores: int
    sharers: int = 1

    @property
    def oversubscribed(self) -> bool:
        """More sharers than cores: each still takes one thread, so they share cores."""
        return self.source == "cores" and self.sharers > self.cores


def parse_threads(value: object, field: str, example: str) -> int:
    """`value` (an option's int, an env variable's text) as a thread count, or a one-line
    LatentfuzzError naming `field`, with `example` as the fix."""
    text = str(value).strip()
    n = int(text) if text.isdigit() else 0
    if not 1 <= n <= MAX_THREADS:
        shown = text if len(text) <= 40 else text[:40] + "…"
        raise LatentfuzzError(
            f"{field} is {shown!r}, expected a whole number of threads from 1 to "
            f"{MAX_THREADS}; give e.g. {example}, or leave it out for the cores' share"
        )
    return n


def _omp_cap(environ: MutableMapping[str, str]) -> int | None:
    # OpenMP's own syntax allows a list per nesting level ("4,2"): its first is ours.
    first = environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(first) if first.isdigit() and int(first) > 0 else None


def choose(
    sharers: int = 1,
    option: int | None = None,
    environ: MutableMapping[str, str] | None = None,
    n_cores: int | None = None,
) -> Choice:
    """The thread count for one of `sharers` processes sharing this process's cores.
    `option`: ``--threads`` (None: not given); `n_cores`: the cores (default: `cores()`)."""
    env = os.environ if environ is None else environ
    c = n_cores if n_cores is not None else cores()[0]
    sharers = max(1, sharers)
    if option is not None:
        return Choice(parse_threads(option, "--threads", "--threads 1"), "option", c, sharers)
    if (given := env.get(THREADS_ENV)) is not None:
        return Choice(
            parse_threads(given, f"${THREADS_ENV}", f"{THREADS_ENV}=1"), THREADS_ENV, c, sharers
        )
    share = max(1, c // sharers)
    cap = _omp_cap(env)
    if cap is not None and cap < share:
        return Choice(cap, "OMP_NUM_THREADS", c, sharers)
    return Choice(share, "cores", c, sharers)


def apply(threads: int) -> None:
    """Set torch's intra-op threads to `threads`, and its inter-op pool to one thread
    (torch allows that once, before inter-op work: a second call lets it be)."""
    # Deferred (torch: this module is imported by the entry point, before torch).
    import torch

    torch.set_num_threads(threads)
    # Set already, or the pool has started: it stays as it is.
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(INTEROP_THREADS)


def note(choice: Choice) -> str | None:
    """A line for the user when the choice shares cores: more workers than cores."""
    if not choice.oversubscribed:
        return None
    return (
        f"{choice.sharers} workers on {choice.cores} cores: 1 torch thread each, and the "
        "workers share the cores; --workers at most the cores runs each at full speed"
    )


def describe() -> str:
    """One line of what this process runs with, e.g. 'torch threads 2 (inter-op 1),
    OMP_WAIT_POLICY=PASSIVE, cores 2 (affinity)'."""
    # Deferred (torch: this module is imported by the entry point, before torch).
    import torch

    n, where = cores()
    policy = os.environ.get(WAIT_POLICY, "unset")
    return (
        f"torch threads {torch.get_num_threads()} (inter-op {torch.get_num_interop_threads()}), "
        f"{WAIT_POLICY}={policy}, cores {n} ({where})"
    )


def record() -> dict[str, object]:
    """What a campaign row's environment keeps of the threads (engine/campaign/runner.py)."""
    # Deferred (torch: this module is imported by the entry point, before torch).
    import torch

    return {
        "interop_threads": torch.get_num_interop_threads(),
        "omp_wait_policy": os.environ.get(WAIT_POLICY),
        "cores": cores()[0],
    }
