"""Is a `running` campaign alive? A lock held for the campaign's whole life answers exactly.

The campaign process holds an exclusive flock on ``campaigns/<id>/campaign.lock`` from
before its row is inserted until after its last write. The kernel drops the lock when the
process ends, however it ends (kill -9, out of memory, power loss), so a reader that can
take the lock knows the process is gone: no heartbeat interval to tune, no clock to trust.
The file also records the holder's pid and process start time, so that Stop signals the
campaign's own process and never a stranger who was given the same pid later.

A reader that finds a dead `running` campaign marks it `crashed` (``store.campaigns.reap``),
in a write that re-checks the lock, so a campaign that is resumed at that moment is never
marked.
A read-only store cannot be marked: ``status`` still reports `crashed`.
"""

from __future__ import annotations

import fcntl
import os
import signal
from pathlib import Path

from store import interrupts
from store.errors import StoreError

LOCK_NAME = "campaign.lock"
#: Statuses of a campaign whose process is gone before its end: `latentfuzz resume` goes on.
RESUMABLE = ("crashed", "interrupted")
CRASHED_ERROR = (
    "the campaign process ended without closing the campaign (killed, out of memory or a "
    "power loss); `latentfuzz resume {cid}` continues it from its last written generation"
)


def without_advice(error: str | None) -> str:
    """A stopped campaign's error without the command line's advice to resume it (for a
    page that offers Resume beside it)."""
    return (error or "").split("; `latentfuzz resume")[0]


def lock_path(home: Path, cid: str) -> Path:
    return Path(home) / "campaigns" / cid / LOCK_NAME


def process_start(pid: int) -> str | None:
    """The start time of process `pid` in clock ticks since boot (Linux), None if unknown.
    A pid is reused, a (pid, start time) pair is not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22; the command name (field 2) may hold spaces, so split after its ')'.
    return stat.rsplit(")", 1)[1].split()[19]


class CampaignLock:
    """The lock a campaign process holds for its life (see the module docstring)."""

    def __init__(self, home: Path, cid: str) -> None:
        self.path = lock_path(home, cid)
        self.fd: int | None = None

    def acquire(self) -> CampaignLock:
        """Take the lock or raise StoreError naming the process that holds it."""
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            # Something that is not a folder stands where the campaign's folder belongs
            # (a file moved or copied there by hand): its images and lock cannot live there.
            raise StoreError(
                f"{folder} is not a folder (expected campaign {folder.name}'s folder of "
                "images); move that file aside and run the command again"
            ) from None
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            who = holder_of(self.path)
            raise StoreError(
                f"campaign {self.path.parent.name} is running (pid "
                f"{who[0] if who else '?'}); stop it first"
            ) from None
        pid = os.getpid()
        os.ftruncate(fd, 0)
        os.write(fd, f"{pid} {process_start(pid) or '-'}\n".encode())
        self.fd = fd
        interrupts.lock_taken()  # from here an interrupt closes the campaign, not the process
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # drops the flock
            self.fd = None
            interrupts.lock_released()


def holder_of(path: Path) -> tuple[int, str | None] | None:
    """(pid, start time) of the live process holding the campaign lock at `path`, or None
    when no process holds it (or there is no lock file: the process never got that far)."""
    try:
        fd = os.open(path, os.O_RDONLY)  # flock needs no write access: read-only homes work
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 64, 0).decode(errors="replace").split()
            if not text:
                return (-1, None)
            return (int(text[0]), None if len(text) < 2 or text[1] == "-" else text[1])
        return None  # we got the lock: its holder is gone
    finally:
        os.close(fd)


def alive(home: Path, cid: str) -> bool:
    return holder_of(lock_path(home, cid)) is not None


def live_campaigns(home: Path) -> list[str]:
    """Ids of the campaigns whose process is alive now."""
    return sorted(
        p.parent.name for p in Path(home).glob(f"campaigns/*/{LOCK_NAME}") if holder_of(p)
    )


def status(home: Path, cid: str, stored: str) -> str:
    """The status to show: `crashed` for a `running` row whose process is gone."""
    return "crashed" if stored == "running" and not alive(home, cid) else stored


def stop(home: Path, cid: str, sig: int = signal.SIGTERM) -> bool:
    """Signal the campaign's own process: only while it holds the campaign lock, and only
    if the pid in the lock file still has the start time recorded there. False otherwise."""
    who = holder_of(lock_path(home, cid))
    if who is None or who[0] <= 0:
        return False
    pid, start = who
    if start is not None and process_start(pid) != start:
        return False  # the pid now belongs to another process
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True
