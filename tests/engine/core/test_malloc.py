"""engine/core/malloc.py: freed batch buffers stay mapped, counted in page faults, not timed."""

from __future__ import annotations

import subprocess
import sys

import pytest

# A batch's activations: four 12 MiB blocks, written (so their pages are touched), then
# freed; the minor page faults of 30 such batches after a first one.
BATCHES = """
import resource, sys
import numpy as np
from engine.core.malloc import keep_freed_memory
if sys.argv[1] == "tuned" and not keep_freed_memory():
    print("unsupported"); raise SystemExit
def batch():
    return [np.ones(12 << 20, np.uint8) for _ in range(4)][-1][0]
batch()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(30):
    batch()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults(mode: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", BATCHES, mode], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_freed_batch_buffers_are_not_faulted_in_again():
    tuned = faults("tuned")
    if tuned == "unsupported":
        pytest.skip("this C library has no mallopt (glibc only)")
    untuned = int(faults("default"))
    # glibc's defaults unmap or trim the blocks after every batch: about 12,000 faults per
    # batch here. Tuned, the same pages serve every batch.
    assert untuned > 30 * 1000
    assert int(tuned) < untuned / 100


def test_a_campaign_runs_with_the_tuned_allocator(tiny_zoo, tmp_path, monkeypatch):
    from engine.campaign.config import parse_config
    from engine.campaign.runner import run_campaign
    from engine.core import malloc

    calls = []
    monkeypatch.setattr(malloc, "_done", None)
    real = malloc.keep_freed_memory
    monkeypatch.setattr(
        "engine.campaign.runner.keep_freed_memory", lambda: calls.append(1) or real()
    )
    cfg = parse_config({"seeds": 2, "generator": "vae", "strategy_params": {"generations": 2}})
    run_campaign(cfg, tmp_path, models_root=tiny_zoo)
    assert calls  # before the batch sweep and the search
