"""Importing other tools' results (GIFTbench's CSV and image folder) as a campaign.

An imported campaign has kind `imported`: one seed row per image, with the tool's expected
and predicted labels and iterations, its other per-image fields (perturbation sizes, run,
image number) in the seed's `params` JSON, and the images copied into the campaign's
folder as PNGs. It has no generations, individuals or metrics rows: the tool recorded only
the end of each search. Which column is which is a small YAML mapping (engine/io/formats/ holds
the built-in ones; engine/io/results_csv.py reads it), so another tool's format needs a
mapping, not code.

Everything is checked (columns, labels, every image's shape and range) before anything is
written; the PNGs go to a temporary folder, and the rows into the store in one transaction.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from engine.core.csv_io import MAX_ROWS
from engine.core.errors import ConfigError
from engine.core.files import sha256
from engine.core.home import campaign_dir, seed_dir
from engine.core.ids import check_new_id, timestamped_id
from engine.datasets import get_dataset, printable
from engine.datasets.imagenet_subset import ImageNetSubset
from engine.io.result_images import Scan, image_to_pil, read_image, run_scale
from engine.io.results_csv import (  # noqa: F401 (builtin_mapping: the CLI imports it from here)
    OTHER_CLASS,
    ResultsMapping,
    builtin_mapping,
    read_results,
)
from store import Store
from store import campaigns as sc
from store.maintenance import require_sound
from store.writer import now


def imported_note(c: dict[str, Any]) -> str:
    """The sentence an imported campaign's page shows where a native one has charts."""
    cfg = c.get("config") or {}
    return (
        f"Imported from another tool's results ({cfg.get('format') or 'a mapping'}, "
        f"{cfg.get('source', 'a folder')}): it holds each image's final outcome only, with "
        "no generations, so there are no convergence charts, search metrics or per-seed "
        "histories."
    )


@dataclass
class ImportResult:
    campaign_id: str
    rows: int
    misclassified: int
    kinds: Counter = field(default_factory=Counter)  # e.g. ".npy [0, 1]": 3
    ignored_columns: list[str] = field(default_factory=list)
    skipped: int = 0  # rows naming no image and no labels (a line of means under the table)


#: Record key -> the PNG it becomes in the seed's folder.
IMAGES = {"image": "result.png", "seed_image": "seed.png"}


# ------------------------------------------------------------------------------ import


def import_results(
    store: Store,
    home: Path,
    folder: Path,
    dataset: str,
    generator_name: str,
    mapping: ResultsMapping,
    fmt: str | None = None,
    name: str | None = None,
    preset: str | None = None,
    campaign_id: str | None = None,
    max_rows: int = MAX_ROWS,
) -> ImportResult:
    """Import a tool's results folder as a campaign of kind `imported`; returns its id."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(
            f"{folder} is not a folder; expected the tool's results folder (its CSV and images)"
        )
    if not generator_name.strip():
        raise ConfigError("--generator-name is empty; give the generator the tool used")
    ds = get_dataset(dataset)
    records, files, ignored, skipped = read_results(folder, mapping, ds, max_rows)
    # ImageNet's readers resize whatever they read (the ICST study's VAE made 128 x 128).
    fit = isinstance(ds, ImageNetSubset)
    scales = {key: _scale(records, key, ds.shape, mapping.pixels, fit) for key in IMAGES}
    store.require_writable()
    require_sound(store)
    cid = campaign_id or timestamped_id()
    check_new_id(cid, store, home)
    final = campaign_dir(home, cid)
    tmp = final.parent / f".{cid}.importing"
    kinds: Counter = Counter()
    try:
        for i, rec in enumerate(records):
            folder_i = tmp / Path(seed_dir(cid, i)).name  # the campaign's own layout
            folder_i.mkdir(parents=True)
            for key, out in IMAGES.items():
                if rec[key] is not None:
                    img, kind = read_image(rec[key], ds.shape, scales[key], fit)
                    kinds[kind] += 1
                    image_to_pil(img).save(folder_i / out)
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        _write(store, cid, records, files, ds, generator_name, mapping, fmt, name, preset, folder)
    except BaseException:
        shutil.rmtree(final, ignore_errors=True)
        raise
    mis = sum(r["expected"] != r["predicted"] for r in records)
    return ImportResult(cid, len(records), mis, kinds, ignored, skipped)


def _scale(records: list[dict], key: str, shape, pixels: str, fit: bool) -> str | None:
    """The pixel scale of the run's .npy images under `key` (results and seed images are
    judged apart: a tool's seeds may be dataset images beside a GAN's results)."""
    if pixels != "auto":
        return pixels
    paths = [r[key] for r in records if r[key] is not None and r[key].suffix.lower() == ".npy"]
    return run_scale(Scan.of(p, shape, fit) for p in paths)


def _campaign_preset(records: list[dict], given: str | None, m: ResultsMapping) -> str | None:
    """--preset, else the mapping's constant, else the preset column's one value ('mixed'
    when the rows differ)."""
    if given or m.constants.preset:
        return given or m.constants.preset
    values = {r["preset"] for r in records if r["preset"]}
    return None if not values else values.pop() if len(values) == 1 else "mixed"


def _write(store, cid, records, files, ds, generator, m, fmt, name, preset, folder) -> None:
    """The campaign, seed and image rows, in one transaction."""
    n = len(records)
    rel = f"campaigns/{cid}"
    results = [f"{seed_dir(cid, i)}/result.png" for i in range(n)]
    seeds_ = [
        None if r["seed_image"] is None else f"{seed_dir(cid, i)}/seed.png"
        for i, r in enumerate(records)
    ]
    expected = np.array([r["expected"] for r in records], dtype=np.int32)
    predicted = np.array([r["predicted"] for r in records], dtype=np.int32)
    failed = expected != predicted
    # A class of the taxonomy outside the subset has no index: NULL, its id in params.
    final_pred = pa.array(predicted, mask=predicted == OTHER_CLASS)
    cfg: dict[str, Any] = {
        "kind": "imported",
        "format": None if fmt is None else printable(fmt),
        "source": printable(folder.resolve()),
        "dataset": ds.name,
        "generator": generator,
        "mapping": m.model_dump(),
    }
    if m.constants.generations:
        cfg["strategy_params"] = {"generations": m.constants.generations}

    env = {
        "imported_from": printable(folder.resolve()),
        "latentfuzz": version("latentfuzz"),
        "files": {printable(f.name): sha256(f) for f in files},
    }
    t = now()
    campaign = pa.table(
        {
            "id": [cid],
            "name": [name or f"{generator} (imported)"],
            "status": ["finished"],
            "created_at": [t],
            "finished_at": [t],
            "dataset": [ds.name],
            "generator": [generator],
            "classifier": [m.constants.classifier],
            "strategy": [m.constants.strategy],
            "preset": pa.array([_campaign_preset(records, preset, m)], pa.string()),
            "n_seeds": [n],
            "random_seed": [0],
            "config": [json.dumps(cfg)],
            "environment": [json.dumps(env)],
            "dir": [rel],
            "kind": ["imported"],
        }
    )
    seeds = pa.table(
        {
            "seed_idx": pa.array(np.arange(n, dtype=np.int32)),
            "seed_label": pa.array(expected),
            # The tool searched from these seeds, so they were viable: it predicted the label.
            "seed_pred": pa.array(expected),
            "seed_margin": pa.array(np.full(n, np.nan)),  # not recorded by the tool
            "viable": pa.array(np.ones(n, dtype=bool)),
            "status": pa.array(np.where(failed, "misclassified", "survived").tolist()),
            "misclassified": pa.array(failed),
            "iterations": pa.array([r["iterations"] for r in records], pa.int32()),
            "final_pred": final_pred,
            "seed_image": pa.array(seeds_, pa.string()),
            "result_image": pa.array(results),
            "params": pa.array([json.dumps(r["params"], default=str) for r in records]),
        }
    )
    image_rows = pd.DataFrame(
        [(i, "result", p) for i, p in enumerate(results)]
        + [(i, "seed", p) for i, p in enumerate(seeds_) if p is not None],
        columns=["seed_idx", "kind", "path"],
    )
    images = pa.Table.from_pandas(image_rows, preserve_index=False)
    sc.insert_finished(store, cid, campaign, {"seeds": seeds, "images": images})
