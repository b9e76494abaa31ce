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

Once the campaign is closed, the runner raises the held interrupt (engine/runner.py), so a
loop of campaigns in one process (a grid, a study, the bench) still stops.

Signal handlers run on the main thread only, so a close on another thread (a grid worker's
thread, a test's) runs as before.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator

#: The signals the CLI turns into KeyboardInterrupt (engine/cli.py): Ctrl-C and the stop.
SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: A wait for another process's store lock shorter than this is contention (a dashboard
#: page reading for a moment), not a wait the user must be able to leave.
GIVE_WAY_AFTER = 1.0


class Hold:
    """One close's hold. `noted`: an interrupt was held back (it stays set after the
    block, for the caller to stop once the campaign is closed); `forced`: a second one
    stopped the close."""

    def __init__(self, what: str) -> None:
        self.what, self.noted, self.forced = what, False, False
        self.give_way = False


_current: list[Hold] = []  # the hold in force (one at most: only the main thread holds)
_last_forced: list[str] = []


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def held(notify: Callable[[str], None], what: str = "") -> Iterator[Hold]:
    """Hold back interrupts for the block (see the module's docstring); `notify` tells the
    user, once, that the close goes on and how to stop it anyway. `what` names the campaign
    for `forced()`."""
    hold = Hold(what)
    if not _on_main_thread() or _current:
        yield hold
        return
    _last_forced.clear()
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    # Only signals that would raise KeyboardInterrupt: a handler of the caller's own (or a
    # SIGTERM left to kill the process) is not ours to change.
    ours = [s for s, h in previous.items() if h is signal.default_int_handler]

    def restore() -> None:
        for s in ours:
            signal.signal(s, previous[s])

    def on_signal(signum: int, frame: object) -> None:
        if hold.noted:
            hold.forced = True
            _last_forced[:] = [what]
            restore()
            raise KeyboardInterrupt
        hold.noted = True
        notify("closing the campaign: its last images and rows are being written; "
               "press Ctrl-C again to stop now (it can then be resumed)")  # fmt: skip

    for s in ours:
        signal.signal(s, on_signal)
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
_deferred: list[bool] = []  # [noted] while a start-up defers interrupts
_deferring: list[int] = []  # the signals whose handler it replaced


def defer_start_up(notify: Callable[[str], None] | None = None) -> None:
    """Note Ctrl-C and SIGTERM from now on instead of raising them, until `checkpoint()`
    or `start_search()`; a second one raises at once (the user insists). Main thread only,
    and only signals whose handler raises KeyboardInterrupt (the CLI sets them first)."""
    if not _on_main_thread() or _deferred:
        return

    def on_signal(signum: int, frame: object) -> None:
        if _deferred and _deferred[0]:
            end_start_up()
            raise KeyboardInterrupt
        if _deferred:
            _deferred[0] = True
            if notify is not None:  # the step under way (a diffusion model's load) can last
                notify("stopping once the current start-up step is done; press Ctrl-C again "
                       "to stop at once")  # fmt: skip

    _deferred.append(False)
    _deferring[:] = [s for s in SIGNALS if signal.getsignal(s) is signal.default_int_handler]
    for s in _deferring:
        signal.signal(s, on_signal)


def end_start_up() -> bool:
    """End the deferral (handlers back to raising); whether an interrupt was noted."""
    if not (_deferred and _on_main_thread()):
        return False
    noted = _deferred[0]
    _deferred.clear()
    for s in _deferring:
        signal.signal(s, signal.default_int_handler)
    return noted


@contextlib.contextmanager
def start_up_deferred(notify: Callable[[str], None] | None = None) -> Iterator[None]:
    """`defer_start_up()` for the block, ended whatever ends it (a refused config)."""
    defer_start_up(notify)
    try:
        yield
    finally:
        end_start_up()


def checkpoint() -> None:
    """Raise a Ctrl-C the start-up deferred, if any (the deferral goes on otherwise)."""
    if _deferred and _deferred[0] and _on_main_thread():
        end_start_up()
        raise KeyboardInterrupt


def start_search() -> None:
    """The search begins: interrupts raise again, and one deferred so far is raised now."""
    if end_start_up():
        raise KeyboardInterrupt
