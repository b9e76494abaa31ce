"""CPU-bound neighbours: `latentfuzz bench --neighbour N` measures beside N busy processes.

A neighbour is a child Python process spinning on integer arithmetic: one thread, no
memory traffic, no sleep, so one neighbour keeps one core busy, the way a user's second
campaign, a browser tab or a CI job on the same runner does. Each runs in a session of its
own and is ended by its process group when the block ends, on an error or Ctrl-C too; a
neighbour whose parent died (SIGKILL leaves no `finally`) notices the new parent id within
a fraction of a second and exits, so none outlives the bench.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

#: The neighbour's loop: checks its parent every 200,000 turns (a few ms of work).
SPIN = (
    "import os, sys\n"
    "parent = int(sys.argv[1])\n"
    "x = 1\n"
    "while os.getppid() == parent:\n"
    "    for _ in range(200_000):\n"
    "        x = (x * 1103515245 + 12345) & 0x7FFFFFFF\n"
)


def start(n: int) -> list[subprocess.Popen]:
    """n busy neighbours, each in its own session."""
    procs: list[subprocess.Popen] = []
    try:
        for _ in range(n):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", SPIN, str(os.getpid())],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
    except BaseException:
        end(procs)  # the ones started before a failed start go too
        raise
    return procs


def end(procs: list[subprocess.Popen]) -> None:
    """Kill each neighbour's process group and reap it."""
    for p in procs:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL)
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(10)


@contextlib.contextmanager
def neighbours(n: int) -> Iterator[list[subprocess.Popen]]:
    """N busy neighbours for the block's duration (none for n = 0)."""
    procs = start(n)
    try:
        yield procs
    finally:
        end(procs)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds process `pid` has used (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settings() -> dict[str, object]:
    """The thread settings this process runs with: OpenMP's wait policy, torch's intra- and
    inter-op threads and the cores it may use."""
    # Deferred (start-up time: torch is only needed once a bench runs).
    import torch

    return {
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset"),
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "cores": len(os.sched_getaffinity(0)),
    }


def describe(s: dict[str, object] | None = None) -> str:
    s = s or settings()
    return (
        f"OMP_WAIT_POLICY {s['omp_wait_policy']}, torch threads {s['threads']} "
        f"(inter-op {s['interop_threads']}), {s['cores']} cores"
    )


def child_settings(environment: dict) -> str:
    """A campaign child's settings as its campaign row recorded them."""
    policy = environment.get("omp_wait_policy", "not recorded")
    threads = environment.get("threads", environment.get("torch_threads", "?"))
    if isinstance(threads, dict):  # another helper's record: {"intra": n, "inter": m}
        threads = ", ".join(f"{k} {v}" for k, v in threads.items())
    return f"campaign processes: OMP_WAIT_POLICY {policy}, torch threads {threads}"
