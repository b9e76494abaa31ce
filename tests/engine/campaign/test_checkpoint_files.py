"""A checkpoint stays this machine's: a bundle neither carries one nor brings one in,
`delete` removes it with the campaign, a finished campaign keeps none, and a resume's
time left counts only the generations after it."""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path

import pytest
import torch

from engine.campaign import checkpoint
from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.core.files import sha256
from engine.io.bundle import BundleError, export_bundle, import_bundle
from store import Store
from store.admin import checkpoint_path, delete_campaign

RAW = {
    "seeds": 2,
    "seed": 1,
    "strategy_params": {"generations": 6, "population": 6, "elites": 2, "stop_at_failure": False},
}


def db(home: Path) -> Store:
    return Store(home / "latentfuzz.duckdb")


@pytest.fixture
def stopped(tmp_path: Path, monkeypatch) -> Path:
    """An interrupted campaign `c` with its checkpoint."""
    monkeypatch.setattr(checkpoint.Checkpoints, "due", lambda self: True)

    def stop_at_3(p) -> None:
        if p.generation == 3:
            raise KeyboardInterrupt

    home = tmp_path / "h"
    res = run_campaign(parse_config(RAW), home, campaign_id="c", progress=stop_at_3)
    assert res.status == "interrupted" and checkpoint_path(home, "c").is_file()
    return home


def test_a_bundle_never_carries_a_checkpoint_and_one_that_does_is_refused(
    stopped: Path, tmp_path: Path
):
    bundle = tmp_path / "c.lfz"
    export_bundle(db(stopped), stopped, "c", bundle)
    names = zipfile.ZipFile(bundle).namelist()
    assert names and not [n for n in names if "checkpoint" in n]
    # An attacker's bundle: the real checkpoint added under the campaign's folder, with
    # its hash and size in the manifest, as an honest export would list a file.
    unpacked = tmp_path / "u"
    zipfile.ZipFile(bundle).extractall(unpacked)
    inner = unpacked / "files" / "campaigns" / "c" / "checkpoint.pt"
    inner.write_bytes(checkpoint_path(stopped, "c").read_bytes())
    m = json.loads((unpacked / "manifest.json").read_text())
    m["files"]["files/campaigns/c/checkpoint.pt"] = sha256(inner)
    m["sizes"]["files/campaigns/c/checkpoint.pt"] = inner.stat().st_size
    (unpacked / "manifest.json").write_text(json.dumps(m))
    bad = tmp_path / "bad.lfz"
    with zipfile.ZipFile(bad, "w") as zf:
        for p in sorted(unpacked.rglob("*")):
            if p.is_file():
                zf.write(p, str(p.relative_to(unpacked)))
    target = tmp_path / "t"
    with pytest.raises(BundleError, match="a search checkpoint, which no bundle carries") as e:
        import_bundle(db(target), target, bad)
    assert "\n" not in str(e.value)
    assert db(target).query("SELECT count(*) AS n FROM campaigns")["n"][0] == 0
    assert not list((target / "campaigns").rglob("checkpoint.pt"))
    # The honest bundle imports, and its campaign has no checkpoint to resume from.
    import_bundle(db(target), target, bundle)
    assert not checkpoint_path(target, "c").exists()


def test_delete_removes_the_checkpoint(stopped: Path):
    delete_campaign(db(stopped), stopped, "c")
    assert not checkpoint_path(stopped, "c").exists()


def test_a_finished_campaign_keeps_no_checkpoint(stopped: Path):
    from engine.campaign.resume import resume_campaign

    assert resume_campaign(stopped, "c").status == "finished"
    assert not checkpoint_path(stopped, "c").exists()
    assert not checkpoint_path(stopped, "c").with_name("checkpoint.pt.tmp").exists()


def test_a_checkpoint_holds_tensors_and_plain_values_only(stopped: Path):
    """weights_only loading reads it: no pickled object of ours is needed."""
    data = torch.load(checkpoint_path(stopped, "c"), weights_only=True)
    assert data["generation"] == 3 and data["campaign"] == "c"
    assert isinstance(data["state"]["rng"], torch.Tensor)


def test_a_resumes_time_left_counts_only_the_generations_after_its_checkpoint():
    """Resumed from generation 40's checkpoint and at generation 50 10 s later: one
    generation a second, so the 50 left take about 50 s. Counted from generation 0, as
    for a replay from the start, it said 10 s."""
    from datetime import UTC, datetime, timedelta

    from dashboard.progress import campaign_progress

    start = datetime(2026, 1, 1, 12, 0, 0)
    c = {"created_at": start, "config": {"strategy_params": {"generations": 100}}}
    p = {"generation": 50, "seeds_done": 0, "n_seeds": 10}
    resumed = start + timedelta(hours=1)
    epoch = resumed.replace(tzinfo=UTC).timestamp()
    now = resumed + timedelta(seconds=10)
    _, text = campaign_progress(c, p, now, replay=(epoch, 40, 40, 40))
    assert text.endswith("· 10 s since the resume, at most about 50 s left")
    # Before its first new generation nothing says how fast it goes.
    p0 = {**p, "generation": 40}
    _, text = campaign_progress(c, p0, now, replay=(epoch, 40, 40, 40))
    assert text.endswith("· 10 s since the resume")


def test_the_replay_report_starts_at_the_checkpoint(tmp_path: Path):
    from engine.campaign import startup

    report = startup.ReplayReport(tmp_path, "r", last=40, start=38)
    assert startup.read_replay(tmp_path, "r")[1:] == (38, 40, 38)
    report.restart(0)  # the checkpoint did not fit after all
    assert startup.read_replay(tmp_path, "r")[1:] == (0, 40, 0)


@pytest.mark.parametrize("finds", [0, 3])
def test_the_failure_archives_state_round_trips_empty_or_not(tmp_path: Path, finds: int):
    from engine.core.images import ImageSink
    from engine.search.archive import Archive

    class Rows:
        def append(self, table, **columns) -> None:
            pass

    sink = ImageSink(tmp_path)
    a = Archive("c", Rows(), sink)
    n = 4
    images = torch.arange(n * 4, dtype=torch.uint8).view(n, 1, 2, 2)
    failing = torch.arange(n) < finds
    a.add(
        1,
        torch.zeros(n, dtype=torch.long),
        torch.zeros(n, dtype=torch.long),
        images,
        torch.zeros(n, 10),
        None,
        torch.zeros(n),
        failing,
    )
    sink.close()
    state = checkpoint._copy(a.state_dict())
    torch.save(state, tmp_path / "s.pt")
    b = Archive("c", Rows(), ImageSink(tmp_path))
    b.load_state_dict(torch.load(tmp_path / "s.pt", weights_only=True))
    assert (b.seen, b.count, b.offered) == (a.seen, a.count, a.offered)
    assert len(b.seen) == finds


def test_a_capture_waits_for_the_generation_before_the_stores_next_flush(tmp_path: Path):
    """Counted, not timed: the writer's next flush 1.5 s away and generations of 1 s, no
    capture; 0.5 s away, one (the flush then commits it at once)."""
    from types import SimpleNamespace

    class Writer:
        on_commit: list = []
        batches = committed = 0
        left = 1.5

        def next_flush_in(self) -> float:
            return self.left

    r = SimpleNamespace(
        config=SimpleNamespace(flush_seconds=1.0, model_dump=lambda mode: {}),
        strategy=SimpleNamespace(params=SimpleNamespace(model_dump=lambda mode: {}), name="x"),
        fitness=SimpleNamespace(name="m"),
        criterion=SimpleNamespace(name="m"),
        archive=False,
        generator=SimpleNamespace(options=dict),
        model_hashes={},
    )
    w = Writer()
    ck = checkpoint.Checkpoints(tmp_path, "c", r, w)
    ck.generation_seconds = 1.0
    assert ck.due()  # the first: nothing to wait for
    ck.last = time.monotonic() - 1.0  # one made a second ago
    assert not ck.due()
    w.left = 0.5
    assert ck.due()
    w.left = 1.5
    ck.last = time.monotonic() - checkpoint.STALE  # none for STALE flush periods
    assert ck.due()
