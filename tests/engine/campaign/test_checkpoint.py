"""Resume from a checkpoint: a campaign stopped half-way goes on from its checkpoint, without
evaluating a generation the store holds, to rows, metrics and image files identical to an
uninterrupted run's (GA, SINVAD, NSGA-II differential, a DM campaign); without a usable
checkpoint it replays the whole search as before."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from engine.campaign import checkpoint
from engine.campaign.config import parse_config
from engine.campaign.evaluator import Evaluator
from engine.campaign.resume import resume_campaign
from engine.campaign.runner import run_campaign
from store import Store
from store.admin import checkpoint_path

#: Columns that hold times, not results.
TIMES = ("elapsed_s", "created_at", "finished_at", "wall_seconds", "store_seconds", "pid")
TABLES = {
    "generations": "seed_idx, generation",
    "individuals": "seed_idx, generation, individual",
    "seeds": "seed_idx",
    "images": "seed_idx, kind, path",
    "archive": "entry",
    "campaign_metrics": "campaign_id",
}

GA = {
    "seeds": 4,
    "seed": 3,
    "strategy_params": {
        "generations": 8,
        "population": 8,
        "elites": 3,
        "perturbation": "custom",
        "step": 0.05,
    },
}
SINVAD = {
    "seeds": 3,
    "seed": 4,
    "strategy": "sinvad",
    "strategy_params": {"generations": 8, "population": 10, "elites": 4},
}
NSGA2 = {
    "generator": "gan",
    "classifier": "convnet",
    "classifier_b": "lenet5",
    "strategy": "nsga2",
    "seeds": 2,
    "seed": 5,
    "validators": {},
    "strategy_params": {"generations": 6, "population": 12, "cluster_every": 2},
}
# Archive on, and no failure yet when it stops: an empty archive is saved as well.
GA_ARCHIVE = {**GA, "archive": True}
RANDOM = {
    "seeds": 3,
    "seed": 2,
    "strategy": "random",
    "strategy_params": {"generations": 6, "population": 6, "stop_at_failure": False},
}
INTERPOLATE = {
    "seeds": 2,
    "seed": 2,
    "strategy": "interpolate",
    "strategy_params": {"k": 1, "lambda_steps": 6},
}
# An evaluation budget that cuts the last generation short: SINVAD's sixth generation
# asks 3 of its 6 children (10 + 6 x 4 + 3 = 37); NSGA-II's fifth 5 of 12, with every
# individual recorded (its second objective is cut with the population).
SINVAD_BUDGET = {**SINVAD, "strategy_params": {**SINVAD["strategy_params"], "evaluations": 37}}
NSGA2_BUDGET = {
    **NSGA2,
    "record_individuals": True,
    "strategy_params": {**NSGA2["strategy_params"], "evaluations": 53},
}
DM = {
    "generator": "dm",
    "seeds": 2,
    "seed": 1,
    "batch_size": 16,
    "strategy_params": {"generations": 4, "population": 4, "elites": 2, "stop_at_failure": False},
}


@pytest.fixture
def every_generation(monkeypatch):
    """A capture after every generation, the newest replacing one not yet written: the
    file then matches the generation a test stops at (in a campaign, at most one every
    flush_seconds and under checkpoint.SHARE of the time)."""
    monkeypatch.setattr(checkpoint.Checkpoints, "due", lambda self: True)


class Counting(Evaluator):
    """Counts the candidates this process decodes and classifies."""

    decoded: list[int] = []

    def _evaluate(self, z, labels):
        Counting.decoded.append(int(z.shape[0]))
        return super()._evaluate(z, labels)


def rows(home: Path, cid: str) -> dict[str, pd.DataFrame]:
    store = Store(home / "latentfuzz.duckdb")
    out = {}
    for table, order in TABLES.items():
        df = store.query(f"SELECT * FROM {table} WHERE campaign_id = ? ORDER BY {order}", [cid])
        out[table] = df.drop(columns=[c for c in df.columns if c in TIMES])
    return out


def files(home: Path, cid: str) -> dict[str, bytes]:
    root = home / "campaigns" / cid
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def stop_at(g: int):
    def progress(p) -> None:
        if p.generation == g:
            raise KeyboardInterrupt

    return progress


def interrupted_and_resumed(tmp_path: Path, raw: dict, at: int) -> tuple[Path, Path, list[int]]:
    """An uninterrupted run in home a; in home b the same campaign stopped at generation
    `at`, then resumed. Returns both homes and the first generations the resume reported."""
    cfg = parse_config(raw)
    run_campaign(cfg, tmp_path / "a", campaign_id="c")
    b = tmp_path / "b"
    cut = run_campaign(cfg, b, campaign_id="c", progress=stop_at(at))
    assert cut.status == "interrupted"
    assert checkpoint_path(b, "c").is_file()
    Counting.decoded = []
    seen: list[int] = []
    res = resume_campaign(b, "c", progress=lambda p: seen.append(p.generation), evaluator=Counting)
    assert res.status == "finished"
    # Taken up from the checkpoint: nothing the store held was evaluated again, neither
    # the seeds nor a generation up to `at`.
    assert seen[0] == at + 1
    assert sum(Counting.decoded) == res.evaluations - cut.evaluations
    return tmp_path / "a", b, seen


def assert_identical(a: Path, b: Path) -> None:
    ra, rb = rows(a, "c"), rows(b, "c")
    for table in TABLES:
        pd.testing.assert_frame_equal(ra[table], rb[table], obj=table)
    fa, fb = files(a, "c"), files(b, "c")
    assert sorted(fa) == sorted(fb)
    assert [n for n in fa if fa[n] != fb[n]] == []
    assert not checkpoint_path(b, "c").exists()  # a finished campaign keeps none


@pytest.mark.parametrize(
    ("raw", "at"),
    [
        (GA, 4),
        (GA_ARCHIVE, 1),
        (SINVAD, 3),
        (NSGA2, 3),
        (RANDOM, 3),
        (INTERPOLATE, 3),
        (SINVAD_BUDGET, 3),
        (NSGA2_BUDGET, 3),
    ],
    ids=[
        "ga",
        "ga-archive",
        "sinvad",
        "nsga2",
        "random",
        "interpolate",
        "sinvad-budget",
        "nsga2-budget",
    ],
)
def test_a_campaign_stopped_half_way_resumes_from_its_checkpoint_to_identical_results(
    tmp_path: Path, every_generation, raw: dict, at: int
):
    a, b, _ = interrupted_and_resumed(tmp_path, raw, at)
    assert_identical(a, b)
    if budget := raw["strategy_params"].get("evaluations"):
        seeds = rows(a, "c")["seeds"]
        assert seeds["evaluations"].max() == budget  # a seed searched to the end, cut short
    if raw is NSGA2:
        assert len(rows(a, "c")["archive"]) > 0


def test_a_dm_campaign_stopped_half_way_resumes_from_its_checkpoint(
    tmp_path: Path, every_generation
):
    a, b, _ = interrupted_and_resumed(tmp_path, DM, 2)
    assert_identical(a, b)


def test_a_checkpoint_behind_the_store_is_restored_and_the_rest_replayed(
    tmp_path: Path, monkeypatch
):
    """Written every generation up to 2, none after: the resume takes up generation 2 and
    replays 3 and 4 against the store before new work."""
    real = checkpoint.Checkpoints.generation_done

    def up_to_2(self, c, g, done):
        if g <= 2:
            real(self, c, g, done)

    monkeypatch.setattr(checkpoint.Checkpoints, "due", lambda self: True)
    monkeypatch.setattr(checkpoint.Checkpoints, "generation_done", up_to_2)
    cfg = parse_config(GA)
    run_campaign(cfg, tmp_path / "a", campaign_id="c")
    b = tmp_path / "b"
    run_campaign(cfg, b, campaign_id="c", progress=stop_at(4))
    assert torch.load(checkpoint_path(b, "c"), weights_only=True)["generation"] == 2
    seen: list[int] = []
    res = resume_campaign(b, "c", progress=lambda p: seen.append(p.generation))
    assert res.status == "finished" and seen[0] == 3  # 3 and 4 replayed, from 2
    assert_identical(tmp_path / "a", b)


def test_a_store_without_a_checkpoint_still_resumes_by_replaying(tmp_path: Path):
    """A campaign stored before checkpoints existed: replayed from its first generation."""
    cfg = parse_config(GA)
    run_campaign(cfg, tmp_path / "a", campaign_id="c")
    b = tmp_path / "b"
    cut = run_campaign(cfg, b, campaign_id="c", progress=stop_at(4))
    checkpoint_path(b, "c").unlink(missing_ok=True)
    Counting.decoded = []
    notes: list[str] = []
    seen: list[int] = []
    res = resume_campaign(
        b,
        "c",
        progress=lambda p: seen.append(p.generation),
        evaluator=Counting,
        notify=notes.append,
    )
    assert res.status == "finished" and seen[0] == 1 and notes == []
    assert sum(Counting.decoded) == res.evaluations > cut.evaluations
    assert_identical(tmp_path / "a", b)


def _tamper(path: Path, **changes) -> None:
    data = torch.load(path, weights_only=True)
    data.update(changes)
    torch.save(data, path)


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda p: _tamper(p, fingerprint="0" * 64), "another config, models or libraries"),
        (lambda p: _tamper(p, generation=99), "not among the store's"),
        (lambda p: p.write_bytes(b"PK\x03\x04 not a checkpoint"), "unreadable"),
        (lambda p: _tamper(p, state={"sink": {}}), "does not fit the campaign"),
    ],
    ids=["other-config", "ahead-of-the-store", "garbage", "wrong-shape"],
)
def test_a_checkpoint_that_does_not_match_is_replayed_past(
    tmp_path: Path, every_generation, damage, why: str
):
    cfg = parse_config(GA)
    run_campaign(cfg, tmp_path / "a", campaign_id="c")
    b = tmp_path / "b"
    run_campaign(cfg, b, campaign_id="c", progress=stop_at(4))
    damage(checkpoint_path(b, "c"))
    notes: list[str] = []
    seen: list[int] = []
    res = resume_campaign(b, "c", progress=lambda p: seen.append(p.generation), notify=notes.append)
    assert res.status == "finished" and seen[0] == 1
    assert len(notes) == 1 and why in notes[0] and "\n" not in notes[0]
    assert notes[0].endswith("replaying its search from the start")
    assert_identical(tmp_path / "a", b)


def test_a_checkpoint_from_another_config_is_replayed_past(tmp_path: Path, every_generation):
    """The same campaign id in another home, run with another seed: its checkpoint copied
    over this one's is not taken up."""
    cfg = parse_config(GA)
    run_campaign(cfg, tmp_path / "a", campaign_id="c")
    other = parse_config({**GA, "seed": 9})
    run_campaign(other, tmp_path / "o", campaign_id="c", progress=stop_at(4))
    b = tmp_path / "b"
    run_campaign(cfg, b, campaign_id="c", progress=stop_at(4))
    checkpoint_path(b, "c").write_bytes(checkpoint_path(tmp_path / "o", "c").read_bytes())
    notes: list[str] = []
    assert resume_campaign(b, "c", notify=notes.append).status == "finished"
    assert "another config" in notes[0]
    assert_identical(tmp_path / "a", b)


def test_a_checkpoint_is_written_only_once_its_generation_is_committed(
    tmp_path: Path, every_generation, monkeypatch
):
    """Never ahead of the store: each write happens when the store holds its batch."""
    from store.writer import CampaignWriter

    seen: list[tuple[int, int]] = []
    real = checkpoint.Checkpoints._on_commit

    def on_commit(self, committed):
        before = list(self.written)
        real(self, committed)
        for g in self.written[len(before) :]:
            seen.append((g, committed))

    monkeypatch.setattr(checkpoint.Checkpoints, "_on_commit", on_commit)
    writers: list[CampaignWriter] = []
    real_init = CampaignWriter.__init__

    def init(self, *a, **k):
        real_init(self, *a, **k)
        writers.append(self)

    monkeypatch.setattr(CampaignWriter, "__init__", init)
    run_campaign(parse_config(GA), tmp_path, campaign_id="c", progress=stop_at(5))
    # Batch 1 holds the seeds, batch 1 + g generation g.
    assert seen and all(committed >= g + 1 for g, committed in seen)
