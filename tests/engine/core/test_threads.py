"""engine/core/threads.py: the thread count a campaign or a grid worker takes, and the
OpenMP wait policy (counts and settings only: no timing)."""

from __future__ import annotations

import pytest

from engine.core import threads
from engine.core.errors import LatentfuzzError
from engine.studies.grid import worker_threads


@pytest.mark.parametrize("n_cores", [1, 2, 3, 4, 7, 8, 16, 64])
@pytest.mark.parametrize("workers", [1, 2, 3, 4, 5, 8, 17, 100])
def test_a_grids_workers_times_threads_never_exceed_the_cores(n_cores, workers):
    c = threads.choose(workers, environ={}, n_cores=n_cores)
    assert c.threads >= 1 and c.source == "cores"
    if workers <= n_cores:
        assert workers * c.threads <= n_cores
        assert c.threads == n_cores // workers  # and no core is left idle by rounding down more
        assert threads.note(c) is None
    else:  # more workers than cores: one thread each, and the user is told
        assert c.threads == 1 and c.oversubscribed
        assert threads.note(c) == (
            f"{workers} workers on {n_cores} cores: 1 torch thread each, and the workers share "
            "the cores; --workers at most the cores runs each at full speed"
        )


def test_the_cores_are_this_processes_affinity(monkeypatch):
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 5, 9}, raising=False)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 64)
    assert threads.cores() == (3, "affinity")
    monkeypatch.delenv("LATENTFUZZ_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert worker_threads(3).threads == 1 and worker_threads(1).threads == 3
    monkeypatch.delattr(threads.os, "sched_getaffinity")
    assert threads.cores() == (64, "cpu_count")


def test_overrides_come_first_and_omp_num_threads_caps_the_share():
    env = {"LATENTFUZZ_THREADS": "3", "OMP_NUM_THREADS": "1"}
    assert threads.choose(2, option=5, environ=env, n_cores=2).threads == 5  # --threads
    c = threads.choose(2, environ=env, n_cores=2)
    assert (c.threads, c.source) == (3, "LATENTFUZZ_THREADS")
    c = threads.choose(1, environ={"OMP_NUM_THREADS": "1"}, n_cores=8)
    assert (c.threads, c.source) == (1, "OMP_NUM_THREADS")
    # A cap above the share, or OpenMP's list form, leaves the share / takes its first.
    assert threads.choose(2, environ={"OMP_NUM_THREADS": "16"}, n_cores=8).threads == 4
    assert threads.choose(1, environ={"OMP_NUM_THREADS": "2,1"}, n_cores=8).threads == 2
    assert threads.choose(1, environ={"OMP_NUM_THREADS": "many"}, n_cores=8).threads == 8


@pytest.mark.parametrize(
    "option, env, msg",
    [
        (
            0,
            {},
            "--threads is '0', expected a whole number of threads from 1 to 4096; "
            "give e.g. --threads 1, or leave it out for the cores' share",
        ),
        (-2, {}, "--threads is '-2', expected"),
        (10**6, {}, "--threads is '1000000', expected"),
        (
            None,
            {"LATENTFUZZ_THREADS": "two"},
            "$LATENTFUZZ_THREADS is 'two', expected a whole "
            "number of threads from 1 to 4096; give e.g. LATENTFUZZ_THREADS=1",
        ),
        (None, {"LATENTFUZZ_THREADS": ""}, "$LATENTFUZZ_THREADS is '', expected"),
        (None, {"LATENTFUZZ_THREADS": "9" * 500}, "…', expected"),
    ],
)
def test_bad_thread_counts_are_refused_in_one_line(option, env, msg):
    with pytest.raises(LatentfuzzError) as e:
        threads.choose(1, option=option, environ=env, n_cores=2)
    assert msg in str(e.value) and "\n" not in str(e.value) and len(str(e.value)) < 200


def test_the_wait_policy_is_passive_unless_the_user_set_one():
    env: dict[str, str] = {}
    assert threads.set_wait_policy(env) == "PASSIVE" and env == {"OMP_WAIT_POLICY": "PASSIVE"}
    for theirs in ("ACTIVE", "active", ""):
        env = {"OMP_WAIT_POLICY": theirs}
        assert threads.set_wait_policy(env) == theirs and env == {"OMP_WAIT_POLICY": theirs}


def test_describe_says_threads_policy_and_cores(monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    threads.apply(1)
    text = threads.describe()
    assert text.startswith("torch threads 1 (inter-op ")
    assert text.endswith(", OMP_WAIT_POLICY=PASSIVE, cores 2 (affinity)")
