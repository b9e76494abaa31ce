"""Ctrl-C, and the dashboard's stop (SIGTERM), held back while a campaign closes.

A campaign's close (its images on disk, its last rows and status in one transaction, its
metrics) takes a moment after the search. An interrupt landing inside it used to leave the
row `running`, which readers then mark crashed, although the search had ended: the user
had to resume a campaign that only lacked its last write. While `held()` is in force the
first interrupt is noted and the close goes on to the status the search reached; a second
one stops the process at once, as before.

Waiting for another process's store lock is the exception: that wait can last, so a noted
interrupt is honoured there (`honour()`, from the store's polling loop), and the final
write then puts the campaign's rows in a recovery file (store/writer.py).

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
_noted: list[int] = []
_holding = [False]


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def held(notify: Callable[[str], None]) -> Iterator[None]:
    """Hold back interrupts for the block (see the module's docstring); `notify` tells the
    user, once, that the close goes on and how to stop it anyway."""
    if not _on_main_thread() or _holding[0]:
        yield
        return
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    # Only signals that would raise KeyboardInterrupt: a handler of the caller's own (or a
    # SIGTERM left to kill the process) is not ours to change.
    ours = [s for s, h in previous.items() if h is signal.default_int_handler]

    def restore() -> None:
        for s in ours:
            signal.signal(s, previous[s])

    def on_signal(signum: int, frame: object) -> None:
        if _noted:
            restore()
            raise KeyboardInterrupt
        _noted.append(signum)
        notify("closing the campaign: its last images and rows are being written; "
               "press Ctrl-C again to stop now (it can then be resumed)")  # fmt: skip

    for s in ours:
        signal.signal(s, on_signal)
    _holding[0] = True
    try:
        yield
    finally:
        _holding[0] = False
        restore()
        _noted.clear()


def noted() -> bool:
    """Whether an interrupt was held back in the current block."""
    return bool(_noted)


def honour() -> None:
    """Raise the KeyboardInterrupt held back so far, if any: called where this process
    waits for another one."""
    if _noted and _holding[0] and _on_main_thread():
        _noted.clear()
        raise KeyboardInterrupt


def pause(seconds: float) -> None:
    """time.sleep that a held-back interrupt ends within 50 ms (a handler that only notes
    the signal does not wake a sleep)."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        honour()
        time.sleep(min(left, 0.05))
    honour()
