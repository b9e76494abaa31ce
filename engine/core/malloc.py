"""Keeping freed memory in the process between batches (glibc only; elsewhere a no-op).

A batch's activations are megabytes. glibc serves such blocks with mmap and unmaps them
when freed, and trims the heap's top back to the OS, so every batch page-faults its
buffers in again. In a campaign, where other allocations come between batches, that cost
a 100-seed VAE campaign on 2 cores about 37% of its throughput at batch 128 and 7% at 32
(README, "The bench now, with the allocator fix"). A bare forward loop hides it: glibc's
adaptive threshold settles there. Fixed thresholds keep blocks under 32 MiB on the heap
and the heap's top mapped; the memory cap (`batch_memory_mb`) still bounds what a batch
takes.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
MMAP_THRESHOLD = 32 << 20  # glibc's largest allowed value on 64-bit
TRIM_THRESHOLD = 256 << 20
TOP_PAD = 64 << 20  # the heap grows in steps this large: fewer brk calls and faults

_done: bool | None = None


def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds once per process; False where the C library
    has no `mallopt` (macOS) or refuses (musl)."""
    global _done
    if _done is None:
        try:
            mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
        except (OSError, AttributeError):
            _done = False
        else:
            mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
            _done = all(
                mallopt(k, v)
                for k, v in (
                    (M_MMAP_THRESHOLD, MMAP_THRESHOLD),
                    (M_TRIM_THRESHOLD, TRIM_THRESHOLD),
                    (M_TOP_PAD, TOP_PAD),
                )
            )
    return _done
