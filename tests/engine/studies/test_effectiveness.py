"""`latentfuzz study`: one campaign per generator x preset, same seeds and budget, one table."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.errors import ConfigError
from engine.studies.effectiveness import bundled_generators, run_study
from store import Store
from store import campaigns as sc
from store import studies as ss


def test_study_runs_every_cell_with_the_same_settings(tiny_zoo: Path, tmp_path: Path):
    gens = bundled_generators("mnist", tiny_zoo)
    assert gens == ["mnist-vae", "mnist-gan", "mnist-dm"]  # VAE, GAN, DM as in the ICST tables
    seen = []
    study, table = run_study(
        tmp_path,
        seeds=3,
        generations=4,
        seed=5,
        generators=gens[:2],
        presets=("low", "strong"),
        models_root=tiny_zoo,
        on_campaign=lambda g, p, r: seen.append((g, p, r.status)),
    )
    assert seen == [
        ("mnist-vae", "low", "finished"),
        ("mnist-vae", "strong", "finished"),
        ("mnist-gan", "low", "finished"),
        ("mnist-gan", "strong", "finished"),
    ]
    assert list(zip(table.generator, table.preset, strict=True)) == [(g, p) for g, p, _ in seen]
    assert (table.seeds == 3).all()
    store = Store(tmp_path / "latentfuzz.duckdb")
    for cid in table.campaign:
        c = sc.campaign(store, cid)
        assert c["study"] == study and c["random_seed"] == 5
        assert c["config"]["strategy_params"]["generations"] == 4
    # Same seed and dataset: the VAE cells start from the same seed images.
    vae = table[table.generator == "mnist-vae"].campaign.tolist()
    src = [sc.seeds(store, c)["source_index"].tolist() for c in vae]
    assert src[0] == src[1]
    assert ss.study_table(store, study).equals(table)


def test_a_bad_cell_fails_before_any_campaign_runs(tiny_zoo: Path, tmp_path: Path):
    with pytest.raises(ConfigError, match="perturbation='medium'"):
        run_study(tmp_path, seeds=2, generations=2, presets=("low", "medium"), models_root=tiny_zoo)
    assert not (tmp_path / "campaigns").exists()


def test_same_seed_reproduces_the_table(tiny_zoo: Path, tmp_path: Path):
    cols = [
        "generator",
        "preset",
        "viable",
        "misclassified",
        "iterations_icst",
        "iterations_to_failure",
    ]
    tables = [
        run_study(
            tmp_path / name,
            seeds=3,
            generations=6,
            seed=2,
            generators=["mnist-gan"],
            presets=("strong",),
            models_root=tiny_zoo,
        )[1][cols]
        for name in ("a", "b")
    ]
    assert tables[0].equals(tables[1])
