"""The dashboard's side of the warm launcher (engine/warm.py): one process per server,
started as the server starts, that forks each launched command with the CLI, torch and the
engine already imported. A launch it cannot take (not running, gone, its answer late) is
started the plain way, `python -m engine.entry`, exactly once either way.

Off when `$LATENTFUZZ_WARM_LAUNCHER` is 0. It is restarted when the environment has
changed since it started: a command gets the environment of the dashboard at its launch,
as a plain process would, not that of the server's start.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
from pathlib import Path

ENV = "LATENTFUZZ_WARM_LAUNCHER"
#: Seconds to wait for its "ready" (its imports) and for each answer (a fork).
READY_S, ANSWER_S = 60.0, 10.0

#: Not a change of environment: pytest sets it anew at each phase of each test.
IGNORED = ("PYTEST_CURRENT_TEST",)

_LOCK = threading.Lock()
_PROC: subprocess.Popen | None = None
_ENV: dict[str, str] | None = None


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


def _environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in IGNORED}


def start() -> None:
    """Start the launcher in the background if it is on and not running (the server's
    warm-up calls this; its imports take seconds, and a launch meanwhile goes the plain
    way)."""
    if enabled():
        threading.Thread(target=_ensure, name="latentfuzz-launcher", daemon=True).start()


def _ensure() -> subprocess.Popen | None:
    """The running launcher, started (and waited for) if need be; None if it cannot be."""
    global _PROC, _ENV
    with _LOCK:
        if _PROC is not None and (_PROC.poll() is not None or _environ() != _ENV):
            _forget(_PROC)
        if _PROC is None:
            env = _environ()
            proc = subprocess.Popen(
                [sys.executable, "-m", "engine.warm"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                env=env,
                text=True,
            )
            if _answer(proc, READY_S) is None:
                _stop(proc)
                return None
            _PROC, _ENV = proc, env
        return _PROC


def _answer(proc: subprocess.Popen, timeout: float) -> dict | None:
    """Its next line, parsed; None when it says nothing within `timeout` s or has ended."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        return None
    line = proc.stdout.readline()
    try:
        return json.loads(line) if line else None
    except ValueError:
        return None


def _forget(proc: subprocess.Popen) -> None:
    global _PROC
    _stop(proc)
    if _PROC is proc:
        _PROC = None


def _stop(proc: subprocess.Popen) -> None:
    with contextlib.suppress(OSError):
        proc.kill()
    with contextlib.suppress(Exception):
        proc.wait(timeout=10)


def run(argv: list[str], log: Path) -> int | None:
    """Start `latentfuzz ARGV` through the launcher, its output appended to `log`; its pid,
    or None if the launcher did not start it (and now never will)."""
    if not enabled():
        return None
    claim = log.with_suffix(".claim")
    claim.write_text("")
    pid = None
    # Not while the launcher is starting (its imports take seconds under load): this
    # launch then goes the plain way at once rather than wait for it.
    if _LOCK.acquire(blocking=False):
        try:
            pid = _ask(argv, log, claim)
        finally:
            _LOCK.release()
    if pid is None:
        try:
            claim.unlink()  # taken back: if the launcher's copy comes late, it runs nothing
        except FileNotFoundError:
            return -1  # it did start, and its answer was late: the command runs
        start()  # a fresh launcher for the next launch (in the background)
    return pid


def _ask(argv: list[str], log: Path, claim: Path) -> int | None:
    """The pid the running launcher gives `argv`'s command (called under the lock); None
    when there is no launcher of this environment, or it did not answer (it is then
    stopped: the next launch gets a new one)."""
    proc = _PROC if _PROC is not None and _PROC.poll() is None else None
    if proc is None or _environ() != _ENV:
        return None
    pid = None
    try:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"argv": argv, "log": str(log), "claim": str(claim)}) + "\n")
        proc.stdin.flush()
        pid = (_answer(proc, ANSWER_S) or {}).get("pid")
    except OSError:
        pid = None
    if pid is None:  # gone, wedged or refusing
        _forget(proc)
    return pid
