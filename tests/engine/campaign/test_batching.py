"""Adaptive batching: the choice logic, the memory cap and the cache (no timing asserts:
the sweep runs on a fake clock, and real sweeps are only checked for what they record)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from engine.campaign import batching
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
    # A quiet machine throughout: a sweep made while the machine was busy is made again
    # once it is quieter (tested on its own), and a loaded machine's own load (another
    # test, a build) made a cached sweep read as stale half-way through a test.
    monkeypatch.setattr(batching, "load_per_core", lambda: 0.0)


def test_config_and_env_override_the_measurement(tmp_path: Path, monkeypatch, measured):
    r = resolve(parse_config({"seeds": 2, "batch_size": 77}))
    assert batching.choose(r, tmp_path, 1024).source == "config"
    r = resolve(parse_config({"seeds": 2}))
    monkeypatch.setenv(batching.ENV_VAR, "99")
    c = batching.choose(r, tmp_path, 1024)
    assert (c.batch_size, c.source) == (99, "env")
    assert not (tmp_path / batching.CACHE).exists()


def test_a_sweep_is_cached_per_model_pair_and_machine(tmp_path: Path, measured):
    r = resolve(parse_config({"seeds": 2}))
    first = batching.choose(r, tmp_path, 1024)
    assert first.source == "sweep" and first.batch_size in first.evals_per_s
    assert first.batch_size == max(first.evals_per_s, key=first.evals_per_s.get)
    assert first.batch_size <= first.max_batch
    again = batching.choose(r, tmp_path, 1024)
    assert (again.source, again.batch_size) == ("cache", first.batch_size)
    # Another model pair gets its own entry; the first stays.
    gan = resolve(parse_config({"seeds": 2, "generator": "gan"}))
    assert batching.choose(gan, tmp_path, 1024).source == "sweep"
    assert len(json.loads((tmp_path / batching.CACHE).read_text())) == 2
    # A damaged cache is measured again, not an error.
    (tmp_path / batching.CACHE).write_text("{not json")
    assert batching.choose(r, tmp_path, 1024).source == "sweep"


def test_a_sweep_made_on_a_busy_machine_is_made_again_when_it_is_quieter(
    tmp_path: Path, measured, monkeypatch
):
    r = resolve(parse_config({"seeds": 2}))
    monkeypatch.setattr(batching, "load_per_core", lambda: 3.0)
    assert batching.choose(r, tmp_path, 1024).source == "sweep"
    (entry,) = json.loads((tmp_path / batching.CACHE).read_text()).values()
    assert entry["load_per_core"] == 3.0
    assert batching.choose(r, tmp_path, 1024).source == "cache"  # still busy: kept
    monkeypatch.setattr(batching, "load_per_core", lambda: 0.4)
    assert batching.choose(r, tmp_path, 1024).source == "sweep"  # quieter: measured again
    assert batching.choose(r, tmp_path, 1024).source == "cache"  # a quiet sweep is kept
    monkeypatch.setattr(batching, "load_per_core", lambda: 5.0)
    assert batching.choose(r, tmp_path, 1024).source == "cache"  # ... even when busy again


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
    assert c.batch_size == max(c.evals_per_s, key=c.evals_per_s.get)
    entry = json.loads(path.read_text())[key]
    assert entry["batch_size"] == c.batch_size and set(entry["evals_per_s"]) == {"16", "32", "64"}
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
