"""Other processes' use of this process's cores, from the kernel's accounting: the
arithmetic on crafted samples, the window `recent` measures over (fake clock), and one
real neighbour seen in /proc/stat."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.campaign import cpu_load
from engine.campaign.cpu_load import Sample


def test_others_is_the_cores_busy_less_this_process():
    a = Sample(wall=10.0, busy=100.0, own=5.0)
    # 2 s: the cores were busy 3 s, 1 s of it this process's threads.
    assert cpu_load.others(a, Sample(12.0, 103.0, 6.0), threads=2) == pytest.approx(1.0)
    # This process alone, on both cores: nobody else.
    assert cpu_load.others(a, Sample(12.0, 104.0, 9.0), threads=2) == 0.0
    assert cpu_load.others(a, a, threads=2) is None  # no window, no figure


def test_loaded_means_fewer_free_cores_than_threads():
    # Two threads on two cores: a neighbour on one core is load, a shell is not.
    assert cpu_load.loaded(1.0, threads=2, cores=2)
    assert not cpu_load.loaded(0.4, threads=2, cores=2)
    # One thread on two cores (a grid of two workers): the other worker leaves it a core.
    assert not cpu_load.loaded(1.0, threads=1, cores=2)
    assert cpu_load.loaded(1.6, threads=1, cores=2)
    assert not cpu_load.loaded(None, threads=2, cores=2)  # unknown: the sweep decides


def test_recent_waits_for_a_window_and_starts_afresh_after_a_long_gap(monkeypatch):
    clock = [0.0]
    slept: list[float] = []
    monkeypatch.setattr(cpu_load, "sample", lambda: Sample(clock[0], 10 * clock[0], 0.0))
    monkeypatch.setattr(
        cpu_load.time, "sleep", lambda s: (slept.append(s), clock.__setitem__(0, clock[0] + s))
    )
    monkeypatch.setattr(cpu_load, "_mark", [Sample(0.0, 0.0, 0.0)])
    clock[0] = 0.1  # 0.1 s since the import: waits for the rest of the window
    assert cpu_load.recent(2) == pytest.approx(10.0) and slept == [pytest.approx(0.15)]
    clock[0] = 3.0  # a start-up of 2.75 s: that is the window, no wait
    assert cpu_load.recent(2) == pytest.approx(10.0) and len(slept) == 1
    clock[0] = 100.0  # a long-lived process: what it did a minute ago says nothing of now
    assert cpu_load.recent(2) == pytest.approx(10.0) and slept[-1] == pytest.approx(0.25)


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="no /proc/stat")
def test_a_real_neighbour_is_seen(monkeypatch):
    # A spinning neighbour: its CPU time is counted as others', this sleeping process's not.
    spin = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 3: pass\n"
    p = subprocess.Popen([sys.executable, "-c", spin])
    try:
        a = cpu_load.sample()
        cpu_load.time.sleep(1.0)
        b = cpu_load.sample()
    finally:
        p.kill()
        p.wait()
    # A core's worth in a quiet moment; less under the suite's own neighbours, never none.
    assert cpu_load.others(a, b, threads=1) > 0.2
    assert b.own - a.own < 0.2  # this process slept
