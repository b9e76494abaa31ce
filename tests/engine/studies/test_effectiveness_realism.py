"""The effectiveness study shows each generator's realism (FID and KID in the default
classifier's features, not Inception's) beside its ICST figures, and its figure says so in
its headers."""

from __future__ import annotations

from pathlib import Path

from engine.figures import effectiveness as fig
from engine.studies.effectiveness import run_study, study_realism
from store import Store


def test_the_study_table_gains_each_campaigns_realism(tmp_path: Path):
    # The bundled zoo: its generators are trained, so every seed is viable and has a result.
    _, table = run_study(
        tmp_path,
        seeds=3,
        generations=2,
        seed=1,
        generators=["mnist-vae", "mnist-gan"],
        presets=("high",),
    )
    got = study_realism(Store(tmp_path / "latentfuzz.duckdb"), table)
    assert got[list(table.columns)].equals(table)  # the study's own columns unchanged
    assert got["generator"].tolist() == ["mnist-vae", "mnist-gan"]
    assert got["fid"].notna().all() and got["kid"].notna().all()
    assert (got["fid"] > 0).all() and (got["realism_images"] == 3).all()
    assert "FID (classifier features, not Inception)" in fig.HEADERS
    assert "KID (classifier features, not Inception)" in fig.HEADERS
