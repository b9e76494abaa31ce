"""Ctrl-C, and the dashboard's stop (SIGTERM), held back while a campaign closes.

A campaign's close (its images on disk, its last rows and status in one transaction, its
metrics) takes a moment after the search. An interrupt landing inside it used to leave the
row `running`, which readers then mark crashed, although the search had ended: the user
had to resume a campaign that only lacked its last write. While `held()` is in force the
first interrupt is noted and the close goes on to the status the search reached; a second
one stops the process at once, as before.

The final write's wait for another process's store lock is the exception: it can last, so
once it has lasted a second a noted interrupt ends it (`giving_way()`, `honour()`), and the
campaign's rows go to a recovery file (store/writer.py). Shorter contention (a dashboard
page reading) does not turn a held interrupt into a stop.

Once the campaign is closed, the runner raises the held interrupt (engine/campaign/runner.py), so a
loop of campaigns in one process (a grid, a study, the bench) still stops.

Signal handlers run on the main thread only, so a close on another thread (a grid worker's
thread, a test's) runs as before.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import NoReturn

#: The signals the CLI turns into KeyboardInterrupt (engine/cli/main.py): Ctrl-C and the stop.
SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: A wait for another process's store lock shorter than this is contention (a dashboard
#: page reading for a moment), not a wait the user must be able to leave.
GIVE_WAY_AFTER = 1.0


# The CLI's process, from the first instruction of its entry point (engine/entry.py) on.
# A signal can land while Python is still importing the CLI, typer, torch (seconds on a
# loaded machine), where no handler of the command's is set yet: a process started from
# one that ignores SIGINT (a shell's background job, a pytest-xdist worker) inherits it
# ignored, and Python installs its KeyboardInterrupt only over SIGINT's default, so such
# a Ctrl-C was lost and the campaign ran on for 20 minutes. Nothing needs cleaning up
# before the command's own code begins, nor before a campaign lock is taken (the store is
# kill-safe), so there the process prints one line and exits at once; later a signal
# raises KeyboardInterrupt, or is deferred to a checkpoint (below), as before.
_cli: list[Callable[[FrameType | None], bool]] = []  # whether the command's code has begun
_locks_held = [0]  # campaign locks this process holds (store/liveness.py)
#: What a campaign command says when a signal stops its start-up (engine/cli/common.py).
BEFORE_SEARCH = "interrupted before the search began"


def exit_now(line: str) -> NoReturn:
    """One line on stderr, exit 130 at once: no cleanup to run, no traceback. os.write,
    not sys.stderr: the signal may have landed inside a write to sys.stderr."""
    with contextlib.suppress(OSError):
        os.write(2, f"{line}\n".encode())
    os._exit(130)


def _cli_signal(signum: int, frame: FrameType | None) -> None:
    if _cli and not _locks_held[0] and not _cli[0](frame):
        exit_now("interrupted")
    raise KeyboardInterrupt


def cli_start_up(begun: Callable[[FrameType | None], bool]) -> Callable[[], None]:
    """The CLI's first instruction: Ctrl-C and SIGTERM end the process at once, with one
    line and exit 130, until `begun(frame)` says the command's own code is running (the
    frame the signal landed in); after, they raise KeyboardInterrupt. Inherited dispositions
    (SIGINT ignored) do not count: the user's stop is never lost. Returns what undoes it
    (for a caller that goes on in this process: a test)."""
    before = {s: signal.getsignal(s) for s in SIGNALS}
    _cli[:] = [begun]
    for s in SIGNALS:
        signal.signal(s, _cli_signal)

    def undo() -> None:
        _cli.clear()
        for s, h in before.items():
            signal.signal(s, h)

    return undo


#: The handlers that raise KeyboardInterrupt (the CLI's also ends the start-up at once).
RAISING = (signal.default_int_handler, _cli_signal)


def stop_raises() -> None:
    """Ctrl-C and SIGTERM (the dashboard's stop, `kill`) raise KeyboardInterrupt from now
    on, for a command that stops cleanly. Set explicitly: a process started in the
    background inherits SIGINT as ignored."""
    for s in SIGNALS:
        signal.signal(s, _cli_signal if _cli else signal.default_int_handler)


def lock_taken() -> None:
    """A campaign lock is held (store/liveness.py): a row may read `running`, so an
    interrupt from now on closes the campaign instead of ending the process at once."""
    _locks_held[0] += 1


def lock_released() -> None:
    _locks_held[0] = max(0, _locks_held[0] - 1)


def _take_signals(first: Callable[[], None], second: Callable[[], None]) -> Callable[[], None]:
    """Route Ctrl-C and SIGTERM, where they would raise KeyboardInterrupt, to `first` the
    first time; the next one calls `second`, puts the handlers back and raises. Returns
    what puts the handlers back. A handler of the caller's own (or a SIGTERM left to kill
    the process) is not ours to change."""
    ours = {s: h for s in SIGNALS if (h := signal.getsignal(s)) in RAISING}
    seen = [False]

    def restore() -> None:
        for s, h in ours.items():
            signal.signal(s, h)

    def on_signal(signum: int, frame: object) -> None:
        if seen[0]:
            second()
            restore()
            raise KeyboardInterrupt
        seen[0] = True
        first()

    for s in ours:
        signal.signal(s, on_signal)
    return restore


class Hold:
    """One close's hold. `noted`: an interrupt was held back (it stays set after the
    block, for the caller to stop once the campaign is closed); `give_way`: a long wait
    for the store may end on it now."""

    def __init__(self) -> None:
        self.noted = self.give_way = False


_current: list[Hold] = []  # the hold in force (one at most: only the main thread holds)
_last_forced: list[str] = []


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def held(notify: Callable[[str], None], what: str = "") -> Iterator[Hold]:
    """Hold back interrupts for the block (see the module's docstring); `notify` tells the
    user, once, that the close goes on and how to stop it anyway. `what` names the campaign
    for `forced()`."""
    hold = Hold()
    if not _on_main_thread() or _current:
        yield hold
        return
    _last_forced.clear()

    def first() -> None:
        hold.noted = True
        notify(
            "closing the campaign: its last images and rows are being written; "
            "press Ctrl-C again to stop now (it can then be resumed)"
        )

    restore = _take_signals(first, lambda: _last_forced.append(what))
    _current.append(hold)
    try:
        yield hold
    finally:
        _current.clear()
        restore()


def forced() -> str | None:
    """The `what` of the last close a second interrupt stopped in this process (the CLI's
    message after it), else None; also while that close still unwinds (a query DuckDB
    stopped with an error of its own instead of the KeyboardInterrupt)."""
    return _last_forced[0] if _last_forced else None


@contextlib.contextmanager
def giving_way() -> Iterator[None]:
    """Within the block, a held-back interrupt ends a wait for the store that has lasted
    GIVE_WAY_AFTER seconds (the final write's wait: its rows then go to a recovery file)."""
    hold = _current[0] if _current and _on_main_thread() else None
    if hold is None:
        yield
        return
    hold.give_way = True
    try:
        yield
    finally:
        hold.give_way = False


def honour() -> None:
    """Raise the KeyboardInterrupt held back so far, if any and if the block gives way:
    called where this process has waited long for another one."""
    hold = _current[0] if _current and _on_main_thread() else None
    if hold is not None and hold.noted and hold.give_way:
        hold.give_way = False  # once: the recovery path must not be cut short in turn
        raise KeyboardInterrupt


def pause(seconds: float) -> None:
    """time.sleep that a held-back interrupt ends within 50 ms where the block gives way (a
    handler that only notes the signal does not wake a sleep)."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        honour()
        time.sleep(min(left, 0.05))
    honour()


# Start-up: from the command's first line to the search. A Ctrl-C raised anywhere in
# there lands inside an import (numpy then refuses to load twice), a DuckDB query (which
# turns it into its own RuntimeError) or torch's C++ (an abort), each a traceback; or
# between the campaign's row and its search, which left the row `running` (later crashed)
# while the command said the search had not begun. Deferred, it is raised at the next
# checkpoint, where nothing is half done, or as the search starts, which then ends
# `interrupted` like any stopped search.
class _Deferral:
    noted = False
    final = False  # past the last checkpoint: the campaign's folder, lock and row come next
    restore: Callable[[], None]


_deferral: list[_Deferral] = []  # the start-up's, while it defers interrupts


def defer_start_up(notify: Callable[[str], None] | None = None) -> None:
    """Note Ctrl-C and SIGTERM from now on instead of raising them, until `checkpoint()`
    or `start_search()`; a second one raises at once (the user insists). Main thread only,
    and only signals whose handler raises KeyboardInterrupt (the CLI sets them first)."""
    if not _on_main_thread() or _deferral:
        return
    d = _Deferral()

    def first() -> None:
        if _cli and not _locks_held[0] and not d.final:
            exit_now(BEFORE_SEARCH)  # the CLI's: nothing to clean up yet (see cli_start_up)
        d.noted = True
        if notify is not None:  # the step under way (a diffusion model's load) can last
            notify(
                "stopping once the current start-up step is done; press Ctrl-C again "
                "to stop at once"
            )

    d.restore = _take_signals(first, _deferral.clear)
    _deferral.append(d)


def end_start_up() -> bool:
    """End the deferral (handlers back to raising); whether an interrupt was noted."""
    if not (_deferral and _on_main_thread()):
        return False
    d = _deferral.pop()
    d.restore()
    return d.noted


@contextlib.contextmanager
def start_up_deferred(notify: Callable[[str], None] | None = None) -> Iterator[None]:
    """`defer_start_up()` for the block, ended whatever ends it (a refused config)."""
    defer_start_up(notify)
    try:
        yield
    finally:
        end_start_up()


def checkpoint(final: bool = False) -> None:
    """Raise a Ctrl-C the start-up deferred, if any (the deferral goes on otherwise).
    `final`: the last before the campaign's folder, lock and row are made; from here a
    signal in the CLI is deferred to the search even before the lock (an exit at once
    between the folder and the lock had left a folder without a campaign)."""
    if _deferral and _on_main_thread():
        if _deferral[0].noted:
            end_start_up()
            raise KeyboardInterrupt
        _deferral[0].final = _deferral[0].final or final


def start_search() -> None:
    """The search begins: interrupts raise again, and one deferred so far is raised now."""
    if end_start_up():
        raise KeyboardInterrupt


@contextlib.contextmanager
def masked() -> Iterator[None]:
    """Ctrl-C and SIGTERM noted for the block and acted on as it ends: for importing an
    extension module whose initialisation must not be cut (a KeyboardInterrupt raised
    while DuckDB's module registers its types aborted the process with a "Critical
    nanobind error" and a traceback). The handler in force then runs as before, where
    nothing is half done. Not a signal mask: the kernel hands a process's signal to any
    thread that does not block it, and torch's and DuckDB's threads do not."""
    if not _on_main_thread():
        yield
        return
    noted: list[int] = []
    ours = {s: h for s in SIGNALS if callable(h := signal.getsignal(s))}
    for s in ours:
        signal.signal(s, lambda signum, frame: noted.append(signum))
    try:
        yield
    finally:
        for s, h in ours.items():
            signal.signal(s, h)
        if noted:
            ours[noted[0]](noted[0], sys._getframe())
