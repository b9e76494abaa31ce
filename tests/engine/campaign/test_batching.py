"""Adaptive batching: the choice logic, the memory cap and the cache (no timing asserts:
the sweep runs on a fake clock, and real sweeps are only checked for what they record)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from engine.bench import scale
from engine.campaign import batching, evaluator
from engine.campaign.config import parse_config
from engine.campaign.resolve import resolve
from engine.campaign.runner import run_campaign
from store import Store
from store import campaigns as sc

STILL_RISING = batching.still_rising


class FakeClock:
    """A clock that `work(n)` advances by a cost model instead of real time."""

    def __init__(self, cost) -> None:
        self.t, self.cost, self.calls = 0.0, cost, []

    def __call__(self) -> float:
        return self.t

    def work(self, n: int) -> None:
        self.calls.append(n)
        self.t += self.cost(n)


def peaked(n: int) -> float:
    """Seconds for n items: fastest per item at 256, as on a CPU whose cache fills."""
    per_item = 1e-5 * (1 + abs(torch.log2(torch.tensor(n / 256.0)).item()))
    return n * per_item


def test_the_sweep_keeps_the_fastest_size_and_stops_past_the_peak():
    clock = FakeClock(peaked)
    eps = batching.sweep(clock.work, max_batch=1 << 20, budget_s=10.0, clock=clock)
    assert max(eps, key=eps.get) == 256
    # Two sizes slower than the best in a row end it: 512 and 1024 tried, 2048 not.
    assert list(eps) == [16, 32, 64, 128, 256, 512, 1024]


def test_the_sweep_respects_the_memory_cap_and_the_time_budget():
    clock = FakeClock(peaked)
    eps = batching.sweep(clock.work, max_batch=100, budget_s=10.0, clock=clock)
    assert list(eps) == [16, 32, 64] and max(clock.calls) <= 100
    slow = FakeClock(lambda n: 0.005 * n)  # 5 ms per item
    eps = batching.sweep(slow.work, max_batch=1 << 20, budget_s=0.8, clock=slow)
    # 16 x 2 runs = 0.16 s, 32 x 2 = 0.32 s: then 64 x 2 = 0.64 s overruns the 0.8 s budget,
    # but three sizes are the least that decide; 128 is not tried.
    assert list(eps) == [16, 32, 64] and slow.t < 4 * 0.8
    dm = FakeClock(lambda n: 1.0 * n)  # a second per image
    assert batching.sweep(dm.work, max_batch=1 << 20, budget_s=0.8, clock=dm) == {}
    assert dm.calls == [2, 2]  # only the warm-up and the estimate ran


def test_one_slow_first_measurement_does_not_decide_alone():
    # The warm-up is slow (first-call costs), and so is size 16 (a busy moment); later
    # calls are fast.
    costs = iter([0.3, 0.001, 0.5, 0.5] + [1e-5 * 64] * 2 + [1e-5 * 256] * 2 + [1e-5 * 1024] * 20)
    clock = FakeClock(lambda n: next(costs))
    eps = batching.sweep(clock.work, max_batch=1 << 20, budget_s=0.8, clock=clock)
    assert len(eps) >= 3 and max(eps, key=eps.get) != 16


def test_sizes_measured_in_a_slow_moment_are_measured_again():
    # The machine's speed drifts: size 16 ran in a fast moment, 32 and 64 in a slow one,
    # which ended the first pass; measured again in turns, 64 (truly fastest) wins.
    per_item = {16: 1.3e-5, 32: 1.1e-5, 64: 1.0e-5, 128: 1.05e-5}
    factors = iter([1.0, 1.0, 0.7, 0.7] + [1.5] * 4)
    clock = FakeClock(lambda n: per_item.get(n, 2e-5) * n * next(factors, 0.7))
    eps = batching.sweep(clock.work, max_batch=1 << 20, budget_s=0.05, clock=clock)
    assert list(eps)[:3] == [16, 32, 64] and 128 not in eps  # the first pass stopped at 64
    assert max(eps, key=eps.get) == 64
    assert clock.calls.count(64) > 2 and clock.t <= 0.05 + 1e-9
    # Without the second look, the fast moment decides.
    clock = FakeClock(lambda n: per_item.get(n, 2e-5) * n * next(factors2, 0.7))
    factors2 = iter([1.0, 1.0, 0.7, 0.7] + [1.5] * 4)
    once = batching.sweep(clock.work, 1 << 20, 0.05, clock=clock, refine=False)
    assert max(once, key=once.get) == 16


def test_item_bytes_counts_every_layer_output():
    net = nn.Sequential(nn.Linear(8, 100), nn.ReLU(), nn.Linear(100, 10))
    x = torch.zeros(1000, 8)
    n = batching.item_bytes(lambda b: net(x[:b]), [net], io_bytes=4)
    assert n == 4 * (100 + 100 + 10)  # float32 outputs of the three layers, per item
    # A model without visible layers (TorchScript) falls back to 64 x its I/O bytes.
    assert batching.item_bytes(lambda b: None, [None], io_bytes=10) == 640


@pytest.fixture
def measured(monkeypatch):
    monkeypatch.delenv(batching.ENV_VAR, raising=False)
    # A real sweep that a busy moment cuts short while still rising would be continued by
    # the next choice (`extend`, tested on its own): these tests are about the cache.
    monkeypatch.setattr(batching, "still_rising", lambda *a, **k: False)
    # A quiet machine throughout (load is faked in the tests about it): the suite's own
    # neighbours (another test, a build) must not turn a sweep into a loaded one.
    quiet(monkeypatch)


def quiet(monkeypatch, before: float = 0.0, during: float = 0.0) -> None:
    """Fake other processes' use of the cores (in cores) before and during a sweep."""
    monkeypatch.setattr(batching, "others_before", lambda: before)
    monkeypatch.setattr(batching, "others_during", lambda mark: during)


def test_config_and_env_override_the_measurement(tmp_path: Path, monkeypatch, measured):
    r = resolve(parse_config({"seeds": 2, "batch_size": 77}))
    assert batching.choose(r, tmp_path, 1024).source == "config"
    r = resolve(parse_config({"seeds": 2}))
    monkeypatch.setenv(batching.ENV_VAR, "99")
    c = batching.choose(r, tmp_path, 1024)
    assert (c.batch_size, c.source) == (99, "env")
    assert not (tmp_path / batching.CACHE).exists()


#: Curves real sweeps of this test measured beside a neighbour (a `make test` under -n 2,
#: a busy loop): one size read in a slow moment. For this campaign's steps (2, 50 and 25
#: candidates) the cap fitted to the first is 25 (50 as two batches of 25), to the second
#: 50 (one batch): neither is a swept size, nor need be (`evaluator.fit`). Curve and cap.
NOISY = {
    "two-of-25": ({16: 1757.9, 32: 2077.8, 64: 1028.0, 128: 2265.0, 256: 1218.9}, 25),
    "one-of-50": ({16: 266.6, 32: 349.0, 64: 336.2}, 50),
}


@pytest.mark.parametrize("curve", [None, *NOISY], ids=["measured", *NOISY])
def test_a_sweep_is_cached_per_model_pair_and_machine(tmp_path: Path, measured, monkeypatch, curve):
    if curve is not None:  # the sweep reads a recorded curve: no timing decides
        monkeypatch.setattr(batching, "sweep", lambda *a, **k: dict(NOISY[curve][0]))
    r = resolve(parse_config({"seeds": 2}))
    first = batching.choose(r, tmp_path, 1024)
    eps = first.evals_per_s
    (entry,) = cached(tmp_path).values()
    assert first.source == "sweep" and entry["evals_per_s"] == {str(b): v for b, v in eps.items()}
    # The cache keeps the curve's fastest size; the campaign runs the cap fitted to its
    # own step sizes, which may lie between swept sizes.
    best = entry["batch_size"]
    assert not eps or best == max(eps, key=eps.get)
    counts = evaluator.step_counts(r)
    assert first.batch_size == evaluator.fit(eps, counts, first.max_batch, best)
    assert first.batch_size <= first.max_batch
    if len(eps) >= 2:
        assert min(eps) <= first.batch_size <= max(eps)
    if curve is not None:
        assert first.batch_size == NOISY[curve][1] and first.batch_size not in eps
    again = batching.choose(r, tmp_path, 1024)
    assert (again.source, again.batch_size) == ("cache", first.batch_size)
    # Another model pair gets its own entry; the first stays.
    gan = resolve(parse_config({"seeds": 2, "generator": "gan"}))
    assert batching.choose(gan, tmp_path, 1024).source == "sweep"
    assert len(json.loads((tmp_path / batching.CACHE).read_text())) == 2
    # A damaged cache is measured again, not an error.
    (tmp_path / batching.CACHE).write_text("{not json")
    assert batching.choose(r, tmp_path, 1024).source == "sweep"


def test_an_old_sweep_is_made_again(tmp_path: Path, measured, monkeypatch):
    r = resolve(parse_config({"seeds": 2}))
    assert batching.choose(r, tmp_path, 1024).source == "sweep"
    now = batching.time.time()
    monkeypatch.setattr(batching.time, "time", lambda: now + batching.MAX_AGE_S + 1)
    assert batching.choose(r, tmp_path, 1024).source == "sweep"


def test_a_sweep_of_an_older_inference_path_is_made_again(tmp_path: Path, measured, monkeypatch):
    r = resolve(parse_config({"seeds": 2}))
    monkeypatch.setattr(batching.inference, "PATH", 1)  # eager models, before graphs
    assert batching.choose(r, tmp_path, 1024).source == "sweep"
    monkeypatch.setattr(batching.inference, "PATH", 2)
    assert batching.choose(r, tmp_path, 1024).source == "sweep"
    assert batching.choose(r, tmp_path, 1024).source == "cache"


def test_a_tight_memory_cap_bounds_the_sizes_tried(tmp_path: Path, measured):
    r = resolve(parse_config({"seeds": 2}))
    c = batching.choose(r, tmp_path, 16)  # 16 MiB
    assert c.max_batch is not None and max(c.evals_per_s) <= max(c.max_batch, 16)
    assert c.batch_size <= max(c.max_batch, 1)


def test_a_campaign_stores_its_measured_batch_in_the_config_resume_replays(home: Path, measured):
    cfg = parse_config({"seeds": 2, "seed": 1, "strategy_params": {"generations": 2}})
    res = run_campaign(cfg, home)
    c = sc.campaign(Store(home / "latentfuzz.duckdb"), res.campaign_id)
    b = c["environment"]["batch"]
    assert b["source"] == "sweep" and c["config"]["batch_size"] == b["batch_size"]
    assert set(res.batch_sizes) <= {b["batch_size"], *range(1, b["batch_size"])}
    # The next campaign reads the cache, one size further where the sweep stopped still
    # rising (a busy moment can cut a sweep short); either way its config keeps its batch.
    (entry,) = json.loads((home / batching.CACHE).read_text()).values()
    res2 = run_campaign(cfg, home)
    c2 = sc.campaign(Store(home / "latentfuzz.duckdb"), res2.campaign_id)
    b2 = c2["environment"]["batch"]
    assert b2["source"] in (("cache", "extended") if entry["rising"] else ("cache",))
    assert c2["config"]["batch_size"] == b2["batch_size"]
    if b2["source"] == "cache":
        assert b2["batch_size"] == b["batch_size"]


def test_a_sweep_cut_short_while_rising_climbs_one_size_per_campaign():
    def slow(n: int) -> float:  # a diffusion model on a CPU: fastest per item at 256
        return 2 * peaked(n) * 70

    clock = FakeClock(slow)
    eps = batching.sweep(clock.work, max_batch=1 << 20, budget_s=0.8, clock=clock)
    assert list(eps) == [16, 32, 64] and batching.still_rising(eps, 1 << 20)
    climbs = []
    while batching.extend(clock.work, eps, 1 << 20, budget_s=10.0, clock=clock):
        climbs.append(max(eps))
    assert climbs == [128, 256]  # then 512 was slower than 256: no more climbing
    assert max(eps) == 512 and max(eps, key=eps.get) == 256
    # The best size and the next each ran twice, in turns, in this moment.
    assert clock.calls[-4:] == [256, 512, 256, 512]
    # A step that does not fit in the budget is not taken; the cap bounds it.
    eps = {16: 100.0, 32: 200.0}
    assert not batching.extend(clock.work, eps, 1 << 20, budget_s=0.5, clock=clock)
    assert list(eps) == [16, 32]  # 2 x (32 + 64) / 200 = 0.96 s > 0.5 s: nothing ran
    assert not batching.still_rising({16: 1.0, 32: 2.0}, max_batch=32)
    assert not batching.still_rising({16: 2.0, 32: 1.0}, max_batch=1 << 20)


def count_batches(monkeypatch) -> list[int]:
    """The sizes of the batches the sweeps run from now on, in order."""
    ran: list[int] = []
    real = batching.raw_forward

    def counted(*a, **k):
        fn = real(*a, **k)

        def run(n: int):
            ran.append(n)
            return fn(n)

        return run

    monkeypatch.setattr(batching, "raw_forward", counted)
    return ran


def test_a_cached_sweep_that_was_still_rising_is_extended_by_the_next_campaign(
    tmp_path: Path, measured, monkeypatch
):
    monkeypatch.setattr(batching, "still_rising", STILL_RISING)  # the real rule here
    r = resolve(parse_config({"seeds": 2}))
    first = batching.choose(r, tmp_path, 1024)
    path = tmp_path / batching.CACHE
    cache = json.loads(path.read_text())
    (key,) = cache
    # As a slow model leaves it: 16 and 32 measured, 32 best, the budget spent.
    cache[key].update(evals_per_s={"16": 1000.0, "32": 2000.0}, batch_size=32, rising=True)
    path.write_text(json.dumps(cache))
    c = batching.choose(r, tmp_path, 1024)
    assert c.source == "extended" and set(c.evals_per_s) == {16, 32, 64}
    best = max(c.evals_per_s, key=c.evals_per_s.get)
    # The campaign runs the cap fitted to its steps; the cache keeps the curve's best.
    assert c.batch_size == evaluator.fit(c.evals_per_s, evaluator.step_counts(r), c.max_batch, best)
    entry = json.loads(path.read_text())[key]
    assert entry["batch_size"] == best and set(entry["evals_per_s"]) == {"16", "32", "64"}
    assert entry["rising"] == batching.still_rising(c.evals_per_s, first.max_batch)
    # A step that no longer fits in the budget measures nothing: as cached, and done.
    slow = dict(entry, evals_per_s={"16": 10.0, "32": 20.0}, batch_size=32, rising=True)
    path.write_text(json.dumps({key: slow}))
    ran = count_batches(monkeypatch)
    c = batching.choose(r, tmp_path, 1024)
    assert (c.source, c.batch_size, ran) == ("cache", 32, [])  # counted, not timed
    assert json.loads(path.read_text())[key]["rising"] is False
    entry_rising = dict(entry, rising=False)
    path.write_text(json.dumps({key: entry_rising}))
    assert batching.choose(r, tmp_path, 1024).source == "cache"  # done climbing: as cached


# Load cannot poison the choice (issue 34, point 5): the machine is faked as two cores run
# by two torch threads, so a neighbour taking over half a core is load.


@pytest.fixture
def two_cores(monkeypatch, measured):
    monkeypatch.setattr(batching, "threads", lambda: 2)
    monkeypatch.setattr(batching.cpu_load.threads_mod, "cores", lambda: (2, "affinity"))


def count_sweeps(monkeypatch) -> list[int]:
    """One entry per sweep run from now on (its largest size allowed)."""
    ran: list[int] = []
    real = batching.sweep

    def counted(fn, max_batch, *a, **k):
        ran.append(max_batch)
        return real(fn, max_batch, *a, **k)

    monkeypatch.setattr(batching, "sweep", counted)
    return ran


def cached(home: Path) -> dict:
    path = home / batching.CACHE
    return json.loads(path.read_text()) if path.exists() else {}


def test_a_sweep_that_load_reached_is_not_cached_as_the_answer(
    tmp_path: Path, two_cores, monkeypatch
):
    r = resolve(parse_config({"seeds": 4}))
    sweeps = count_sweeps(monkeypatch)
    quiet(monkeypatch, before=0.1, during=1.0)  # a neighbour started as the sweep ran
    c = batching.choose(r, tmp_path, 1024)
    assert (c.source, c.batch_size, len(sweeps)) == ("loaded", batching.DEFAULT, 1)
    assert c.evals_per_s  # what the loaded sweep read, for the campaign row
    (key,) = cached(tmp_path)
    assert key.endswith(batching.LOADED) and cached(tmp_path)[key]["loaded"] is True
    assert cached(tmp_path)[key]["others_cores"] == 1.0
    # The next campaign has no answer yet: quiet again, it sweeps, and that one is kept.
    quiet(monkeypatch)
    c = batching.choose(r, tmp_path, 1024)
    assert (c.source, len(sweeps)) == ("sweep", 2)
    answer = cached(tmp_path)[key.removesuffix(batching.LOADED)]
    assert "loaded" not in answer and answer["others_cores"] == 0.0
    assert batching.choose(r, tmp_path, 1024).source == "cache" and len(sweeps) == 2


def test_a_loaded_machine_without_a_quiet_answer_does_not_sweep(
    tmp_path: Path, two_cores, monkeypatch
):
    r = resolve(parse_config({"seeds": 4}))
    sweeps = count_sweeps(monkeypatch)
    quiet(monkeypatch, before=1.0)  # a neighbour on one of the two cores
    c = batching.choose(r, tmp_path, 1024)
    assert (c.source, c.batch_size, c.evals_per_s, sweeps) == ("loaded", 256, {}, [])
    assert cached(tmp_path) == {}
    # Half a core of shells and daemons beside two threads on two cores is still quiet.
    quiet(monkeypatch, before=0.4, during=0.4)
    assert batching.choose(r, tmp_path, 1024).source == "sweep" and len(sweeps) == 1


def test_a_cached_quiet_answer_is_used_under_load(tmp_path: Path, two_cores, monkeypatch):
    r = resolve(parse_config({"seeds": 4}))
    sweeps = count_sweeps(monkeypatch)
    first = batching.choose(r, tmp_path, 1024)
    quiet(monkeypatch, before=1.5, during=1.5)
    again = batching.choose(r, tmp_path, 1024)
    assert (again.source, again.batch_size, len(sweeps)) == ("cache", first.batch_size, 1)
    # Not measured again when the load goes (a loaded answer was never the answer).
    quiet(monkeypatch)
    assert batching.choose(r, tmp_path, 1024).source == "cache" and len(sweeps) == 1


def test_a_loaded_machine_does_not_extend_a_rising_sweep(tmp_path: Path, two_cores, monkeypatch):
    monkeypatch.setattr(batching, "still_rising", STILL_RISING)
    r = resolve(parse_config({"seeds": 4}))
    batching.choose(r, tmp_path, 1024)
    path = tmp_path / batching.CACHE
    cache = json.loads(path.read_text())
    (key,) = cache
    cache[key].update(evals_per_s={"16": 1000.0, "32": 2000.0}, batch_size=32, rising=True)
    path.write_text(json.dumps(cache))
    ran = count_batches(monkeypatch)
    quiet(monkeypatch, before=1.0)
    c = batching.choose(r, tmp_path, 1024)
    assert (c.source, ran) == ("cache", [])  # nothing measured beside the neighbour
    assert json.loads(path.read_text())[key]["rising"] is True  # climbs once it is quiet
    quiet(monkeypatch)
    assert batching.choose(r, tmp_path, 1024).source == "extended"


def test_a_campaign_whose_steps_fit_one_small_batch_does_not_sweep(
    home: Path, two_cores, monkeypatch
):
    sweeps = count_sweeps(monkeypatch)
    one = {"seeds": 1, "seed": 1, "strategy_params": {"generations": 2}}  # 25 a generation
    c = batching.choose(resolve(parse_config(one)), home, 1024)
    assert (c.source, c.batch_size, sweeps) == ("small", batching.DEFAULT, [])
    res = run_campaign(parse_config(one), home)
    assert sweeps == [] and not (home / batching.CACHE).exists()
    # Each step ran as one batch: the seed check, then the generations' candidates (then
    # the result, an elite of an earlier generation, decoded again).
    assert res.batch_sizes == [1, 25, 15, 1]
    # 33 candidates a step: a sweep could split them, so it runs.
    two = {"seeds": 1, "strategy_params": {"population": 33, "elites": 10}}
    assert batching.choose(resolve(parse_config(two)), home, 1024).source == "sweep"
    assert len(sweeps) == 1


def test_the_machine_key_holds_the_thread_settings(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    keys = {batching.machine_key()}
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    keys.add(batching.machine_key())
    monkeypatch.setenv("OMP_WAIT_POLICY", "passive")  # OpenMP reads it either way
    assert batching.machine_key() in keys
    torch.set_num_threads(2)  # the autouse fixture sets 1 again for the next test
    keys.add(batching.machine_key())
    assert len(keys) == 3


def test_a_cap_is_fitted_to_the_campaigns_step_sizes():
    # Throughput that rises steeply to 256 and falls slowly after: one batch of 300 runs
    # at 2.9 times the rate of two of 150, though 256 is the fastest size.
    curve = {16: 100.0, 64: 400.0, 128: 1000.0, 256: 3000.0, 512: 2900.0, 1024: 1500.0}
    assert evaluator.fit(curve, [300], None, 256) >= 300
    assert evaluator.split(300, evaluator.fit(curve, [300], None, 256)) == 300
    # Every count: the fitted cap runs it as fast as the best split into equal batches
    # (the shape bound's), within the margin kept for the curve's best size.
    for n in (20, 100, 255, 300, 700, 1500, 2500, 4000):
        cap = evaluator.fit(curve, [n], None, 256)
        k = -(-n // evaluator.split(n, cap))
        mine = n / k / np.interp(n / k, sorted(curve), [curve[b] for b in sorted(curve)])
        bound = scale.shape_bound([n], curve) * max(curve.values())
        assert n / mine >= (1 - evaluator.GAIN) * bound - 1e-6, n
    # A memory bound caps the cap; a flat curve keeps the best size; no curve, no fit.
    assert evaluator.fit(curve, [300], 200, 256) <= 200
    assert evaluator.fit({16: 1.0, 256: 1.0}, [300, 50], None, 256) == 256
    assert evaluator.fit({}, [300], None, 16) == 16


def test_the_evaluator_runs_the_fitted_cap_as_predicted(tmp_path: Path, two_cores, monkeypatch):
    # A 100-seed GA campaign: 2,500 candidates in its first generation, 1,500 after.
    r = resolve(parse_config({"seeds": 100}))
    counts = evaluator.step_counts(r)
    assert counts[:2] == [100, 2500] and counts[-1] == 25 and len(counts) <= 65
    curve = {16: 100.0, 128: 1000.0, 256: 3000.0, 512: 2900.0, 1024: 1500.0}
    cap = evaluator.fit(curve, counts, 1 << 20, 256)
    ev = evaluator.Evaluator(resolve(parse_config({"seeds": 2, "batch_size": cap})))
    z = torch.randn(2500, *ev.gen.latent_shape)
    ev(z, torch.zeros(2500, dtype=torch.long))
    k = -(-2500 // cap)
    step = evaluator.split(2500, cap)
    assert len(ev.batch_sizes) == k and ev.batch_sizes[:-1] == [step] * (k - 1)
    assert step - k < ev.batch_sizes[-1] <= step
    assert max(ev.batch_sizes) <= 2500 and sum(ev.batch_sizes) == 2500
