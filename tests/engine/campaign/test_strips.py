"""Improvement strips cost linear work: each flush appends only new frames, counted in bytes
(not timed), and the strip PNG is assembled once per seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import engine.campaign.runner as runner
from engine.campaign.config import parse_config
from engine.core.images import ImageSink, frame_count, read_frame, sidecar
from store import Store
from store import campaigns as sc

FRAME = 28 * 28  # bytes of one MNIST frame


def frames(n: int, start: int = 0) -> torch.Tensor:
    """n distinct uint8 frames (n, 1, 28, 28)."""
    return (
        torch.arange(start, start + n, dtype=torch.uint8)[:, None, None, None]
        .expand(n, 1, 28, 28)
        .clone()
    )


def test_per_flush_strip_work_does_not_grow_with_the_generation(tmp_path: Path):
    sink = ImageSink(tmp_path)
    strips = ["a/improvements.png", "b/improvements.png"]
    for g in range(200):
        sink.add_frames(strips, frames(2, g))
        sink.write_strips()
    sink._pool.shutdown(wait=True)  # let the appends land, without closing the strips
    # Generation 200's flush queues exactly as much as generation 1's: two new frames.
    assert sink.strip_bytes == [2 * FRAME] * 200
    # A running seed's frames are readable from the sidecar, in order.
    assert frame_count(tmp_path / strips[0], 28) == 200
    assert np.asarray(read_frame(tmp_path / strips[0], 150, 28)).max() == 150
    with pytest.raises(IndexError):
        read_frame(tmp_path / strips[0], 200, 28)


def test_the_strip_png_is_assembled_once_and_the_sidecar_removed(tmp_path: Path):
    sink = ImageSink(tmp_path)
    for g in range(5):
        sink.add_frames(["s/improvements.png"], frames(1, 10 * g))
        if g % 2:
            sink.write_strips()
    sink.write_strips(["s/improvements.png"], release=True)
    sink.close()
    png = tmp_path / "s/improvements.png"
    assert not sidecar(png).exists()
    strip = np.asarray(Image.open(png))
    assert strip.shape == (28, 5 * 28)
    assert [int(strip[0, 28 * i]) for i in range(5)] == [0, 10, 20, 30, 40]
    assert frame_count(png, 28) == 5
    assert np.asarray(read_frame(png, 3, 28)).max() == 30


def test_a_campaign_flushing_every_generation_appends_only_new_frames(home: Path, monkeypatch):
    sinks: list[ImageSink] = []

    class Counting(ImageSink):
        def __init__(self, h: Path) -> None:
            super().__init__(h)
            sinks.append(self)

    monkeypatch.setattr(runner, "ImageSink", Counting)
    cfg = parse_config(
        {
            "seeds": 4,
            "seed": 1,
            "flush_seconds": 1e-6,
            "strategy_params": {"generations": 60, "perturbation": "custom", "step": 0.01},
        }
    )
    res = runner.run_campaign(cfg, home)
    (sink,) = sinks
    gens = sc.generations(Store(home / "latentfuzz.duckdb"), res.campaign_id)
    # One flush per generation; each flush at most one frame per seed, whatever g is.
    assert len(sink.strip_bytes) == gens["generation"].max()
    assert max(sink.strip_bytes) <= 4 * FRAME
    # Every frame was appended exactly once over the campaign: linear in improvements.
    improvements = int(gens["image"].notna().sum())
    # (the flushes' share; a finishing seed's last frames go with its release)
    assert sum(sink.strip_bytes) <= improvements * FRAME
    seeds = sc.seeds(Store(home / "latentfuzz.duckdb"), res.campaign_id)
    for row in seeds[seeds.viable].itertuples():
        n = int(gens[gens.seed_idx == row.seed_idx]["image"].notna().sum())
        assert frame_count(home / row.improvements_image, 28) == n
        assert not sidecar(home / row.improvements_image).exists()


def test_queueing_an_image_costs_the_same_however_many_are_queued(tmp_path: Path, monkeypatch):
    """Counted, not timed: a submit once rescanned every queued write (1,000 seeds finishing
    at once made 2,000 submits scan up to 2,000 futures each)."""
    from concurrent.futures import Future

    looks = [0]
    real_done = Future.done

    def done(self):
        looks[0] += 1
        return real_done(self)

    monkeypatch.setattr(Future, "done", done)
    sink = ImageSink(tmp_path)
    n = 400
    for i in range(n):
        sink.save([f"s{i}/result.png"], frames(1, i))
    sink.close()
    assert looks[0] <= n  # linear: the old rescan made about n * n / 2 looks
    assert len(list(tmp_path.glob("s*/result.png"))) == n
    assert not sink._futures  # done writes forget themselves


def test_a_failed_image_write_is_raised_at_close(tmp_path: Path):
    (tmp_path / "s0").write_text("a file where a folder should be")
    sink = ImageSink(tmp_path)
    sink.save(["s0/result.png"], frames(1))
    with pytest.raises(OSError):
        sink.close()


def test_a_strip_left_half_done_by_an_interrupt_does_not_fail_the_close(tmp_path: Path):
    sink = ImageSink(tmp_path)
    images = torch.zeros((1, 1, 4, 4), dtype=torch.uint8)
    sink.add_frames(["a.png"], images)
    sink.write_strips(["a.png"], release=True)
    sink._submit(sink._assemble, "a.png")  # Ctrl-C before the strip was forgotten: again
    sink._count["b.png"] = 1  # Ctrl-C in add_frames: counted, no frame kept
    sink.close()  # raised FileNotFoundError for a sidecar already gone, or never written
    assert (tmp_path / "a.png").exists() and not (tmp_path / "a.frames").exists()
    assert not (tmp_path / "b.png").exists()


@pytest.mark.parametrize("head", [b"", b"LFFR"])
def test_a_sidecar_cut_inside_its_header_reads_as_unreadable(tmp_path: Path, head: bytes):
    """A kill -9 between creating a sidecar and writing its 10-byte header left a 0 to 9
    byte file, and `doctor` on the killed campaign died of a struct.error (seen once in
    tests/reliability/test_kill_resume.py)."""
    sidecar(tmp_path / "s.png").write_bytes(head)
    assert frame_count(tmp_path / "s.png", 28) is None  # doctor: a strip short of its frames
    with pytest.raises(OSError, match="cut short inside its header"):
        read_frame(tmp_path / "s.png", 0, 28)
    # A resumed campaign starts the sidecar over.
    sink = ImageSink(tmp_path)
    sink.add_frames(["s.png"], frames(1))
    sink.add_frames(["s.png"], frames(1, start=1))
    sink.close()
    assert Image.open(tmp_path / "s.png").size == (2 * 28, 28)
