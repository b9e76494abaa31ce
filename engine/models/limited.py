"""Model checks at import run in a child process, each call to the model under a time limit.

A model file from elsewhere is code: a TorchScript `while` that never ends hung
`models import` with no way out but a kill. So everything that loads or runs an imported
model at import (the validation probes, the accuracy, the timing, the viability) runs in a
child process that reports when each call to the model starts and ends; the parent kills
the child when one call lasts longer than the limit ($LATENTFUZZ_MODEL_TIMEOUT seconds,
60 by default) and refuses the model in one line. The child dies with its parent
(PR_SET_PDEATHSIG on Linux), so a killed import leaves no model spinning behind it.

The child is a plain `python -c` (not multiprocessing): it starts no resource tracker and
re-imports no main module, and the parent's clock alone times the calls.
"""

from __future__ import annotations

import functools
import importlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.core import home as home_module
from engine.core.errors import ConfigError, ModelError

ENV_VAR = "LATENTFUZZ_MODEL_TIMEOUT"
DEFAULT_S = 60.0
BUSY, IDLE, RESULT = b"B", b"I", b"R"
_LENGTH = struct.Struct("<Q")
# The child's first lines: read what to run from stdin, with the parent's import path.
_BOOT = (
    "import pickle, sys; job = pickle.load(sys.stdin.buffer); sys.path[:] = job[0]; "
    "from engine.models.limited import child_main; child_main(*job[1:])"
)

#: In the child: the pipe the parent listens on; None in the parent (calls are not timed).
_beats: int | None = None


def limit_s() -> float:
    """The limit on one call to a model being imported, in seconds."""
    raw = os.environ.get(ENV_VAR, "").strip()
    if not raw:
        return DEFAULT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise ConfigError(
            f"${ENV_VAR} is {raw[:40]!r}, expected a positive number of seconds (default "
            f"{DEFAULT_S:g}); unset it or give e.g. 300 for a slow model"
        )
    return value


@contextmanager
def answering() -> Iterator[None]:
    """The block is one call to the model: the parent stops the child if it lasts longer
    than the limit. Nothing in the parent."""
    if _beats is None:
        yield
        return
    os.write(_beats, BUSY)
    try:
        yield
    finally:
        os.write(_beats, IDLE)


def timed(fn: Callable) -> Callable:
    """fn, each call of it timed as one answer."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        with answering():
            return fn(*args, **kwargs)

    return call


def run_limited(target: Callable, args: tuple, what: str) -> Any:
    """target(*args) in a child process (target: a module-level function, args: picklable),
    the home and import path this process has. Raises what target raised, or ModelError
    when one call to the model (an `answering` block) outlasts the limit."""
    limit = limit_s()
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT], stdin=subprocess.PIPE, pass_fds=(write_fd,)
        )
    finally:
        os.close(write_fd)
    try:
        job = (sys.path, os.getpid(), write_fd, home_module.current_home())
        try:
            proc.stdin.write(pickle.dumps((*job, target.__module__, target.__name__, args)))
            proc.stdin.close()
        except BrokenPipeError:
            pass  # the child is gone already: _listen says so
        status, value = _listen(read_fd, limit, what)
    finally:
        os.close(read_fd)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    if status == "error":
        raise value
    return value


def _listen(fd: int, limit: float, what: str) -> tuple[str, Any]:
    """The child's answer, timing each call it reports by this process's clock."""
    buf, since = b"", None
    while True:
        wait = 0.5 if since is None else max(0.0, min(0.5, since + limit - time.monotonic()))
        if select.select([fd], [], [], wait)[0]:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise ModelError(
                    f"{what}: the process checking it ended without an answer (it may have "
                    f"run out of memory, or the model crashed it); check the file where it "
                    f"was made"
                )
            buf += chunk
            while buf[:1] in (BUSY, IDLE):
                since = time.monotonic() if buf[:1] == BUSY else None
                buf = buf[1:]
            if buf[:1] == RESULT and len(buf) >= 1 + _LENGTH.size:
                (size,) = _LENGTH.unpack_from(buf, 1)
                if len(buf) >= 1 + _LENGTH.size + size:
                    return _unpickle(buf[1 + _LENGTH.size : 1 + _LENGTH.size + size])
        if since is not None and time.monotonic() - since > limit:
            raise ModelError(
                f"{what} did not answer a test input within {limit:g} s; it may loop "
                f"forever: check the model, or allow more time with {ENV_VAR}=SECONDS"
            )


def _unpickle(data: bytes) -> tuple[str, Any]:
    try:
        return pickle.loads(data)
    except Exception as e:  # noqa: BLE001 - an exception type this process cannot rebuild
        return "error", RuntimeError(f"the model check failed: {e}")


def child_main(
    parent: int, fd: int, home: Path, module: str, name: str, args: tuple
) -> None:  # pragma: no cover - runs in the child process
    """The child: die with the parent, run the target, send its result or exception."""
    global _beats
    _die_with_parent(parent)
    _beats = fd
    home_module._current = home
    try:
        answer = ("ok", getattr(importlib.import_module(module), name)(*args))
    except BaseException as e:  # noqa: BLE001 - every failure goes back to the parent
        answer = ("error", e)
    try:
        data = pickle.dumps(answer)
    except Exception:  # noqa: BLE001 - an exception holding something unpicklable
        data = pickle.dumps(("error", RuntimeError(f"{type(answer[1]).__name__}: {answer[1]}")))
    os.write(fd, RESULT + _LENGTH.pack(len(data)))
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _die_with_parent(parent: int) -> None:
    """Ask Linux to kill this process when its parent dies; elsewhere, the parent's kill on
    the limit or on its own exit is all there is."""
    try:
        # Deferred (only in the child, only on Linux).
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took hold
        os._exit(1)
