"""Importing other tools' results (GIFTbench's CSV and image folder) as a campaign.

An imported campaign has kind `imported`: one seed row per image, with the tool's expected
and predicted labels and iterations, its other per-image fields (perturbation sizes, run,
image number) in the seed's `params` JSON, and the images copied into the campaign's
folder as PNGs. It has no generations, individuals or metrics rows: the tool recorded only
the end of each search. Which column is which is a small YAML mapping (engine/io/formats/ holds
the built-in ones), so another tool's format needs a mapping, not code.

Everything is checked (columns, labels, every image's shape and range) before anything is
written; the PNGs go to a temporary folder, and the rows into the store in one transaction.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.core.csv_io import MAX_ROWS, read_table
from engine.core.errors import ConfigError
from engine.core.files import sha256
from engine.core.home import campaign_dir, seed_dir
from engine.core.ids import check_new_id, timestamped_id
from engine.core.untrusted import HEADER_QUOTE, UntrustedFileError, inside, quote
from engine.core.yaml_io import read_mapping
from engine.datasets import Dataset, get_dataset, printable
from engine.io.result_images import find_image, image_to_pil, read_image
from store import Store
from store import campaigns as sc
from store.maintenance import require_sound
from store.writer import now

FORMATS_DIR = Path(__file__).resolve().parent / "formats"
#: Most generations an imported image may say it took (the seeds' column is 32-bit).
MAX_ITERATIONS = 1_000_000_000


class Constants(BaseModel):
    """Campaign fields the tool's CSV does not hold."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    strategy: str = "imported"
    classifier: str = "unknown"
    preset: str | None = None
    generations: int | None = Field(None, ge=1, description="the tool's generation budget")


class ResultsMapping(BaseModel):
    """Which CSV column holds what. Names match ignoring case, spaces, '_' and '-'."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    csv: str = "*.csv"
    images: str = "."
    image: str = "file_name"
    expected: str = "expected"
    predicted: str = "predicted"
    iteration: str | None = "iteration"
    seed_image: str | None = None
    preset: str | None = None
    params: dict[str, str] = Field(default_factory=dict)
    constants: Constants = Field(default_factory=Constants)

    @classmethod
    def from_yaml(cls, path: Path) -> ResultsMapping:
        data = read_mapping(path, "mapping file (see engine/io/formats/)")
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            probs = "; ".join(
                f"{'.'.join(map(str, x['loc'])) or 'mapping'}: {x['msg']}" for x in e.errors()
            )
            keys = ", ".join(cls.model_fields)
            raise ConfigError(f"{path}: {probs} (mapping keys: {keys})") from e

    def columns(self) -> dict[str, str]:
        """field -> column named by the mapping (params under `params.<key>`)."""
        named = {
            "image": self.image,
            "expected": self.expected,
            "predicted": self.predicted,
            "iteration": self.iteration,
            "seed_image": self.seed_image,
            "preset": self.preset,
        }
        named |= {f"params.{k}": v for k, v in self.params.items()}
        return {k: v for k, v in named.items() if v is not None}


def imported_note(c: dict[str, Any]) -> str:
    """The sentence an imported campaign's page shows where a native one has charts."""
    cfg = c.get("config") or {}
    return (
        f"Imported from another tool's results ({cfg.get('format') or 'a mapping'}, "
        f"{cfg.get('source', 'a folder')}): it holds each image's final outcome only, with "
        "no generations, so there are no convergence charts, search metrics or per-seed "
        "histories."
    )


def formats() -> list[str]:
    return sorted(p.stem for p in FORMATS_DIR.glob("*.yaml"))


def builtin_mapping(fmt: str) -> ResultsMapping:
    """The mapping shipped for `--format NAME` (engine/io/formats/NAME.yaml)."""
    if fmt not in formats():
        raise ConfigError(
            f"unknown format {fmt!r}; built in: {', '.join(formats())}. For another tool, "
            "write a mapping file and pass --mapping FILE.yaml"
        )
    return ResultsMapping.from_yaml(FORMATS_DIR / f"{fmt}.yaml")


def _norm(name: str) -> str:
    return re.sub(r"[\s_-]+", "", name).lower()


@dataclass
class ImportResult:
    campaign_id: str
    rows: int
    misclassified: int
    kinds: Counter = field(default_factory=Counter)  # e.g. ".npy [0, 1]": 3
    ignored_columns: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- parsing


def class_index(text: str, ds: Dataset, what: str) -> int:
    """A class index from an index or a class name (case-insensitive)."""
    t = text.strip()
    names = {n.lower(): i for i, n in enumerate(ds.class_names)}
    if t.lower() in names:
        return names[t.lower()]
    try:
        f = float(t)
    except ValueError:
        f = None
    if f is not None and f.is_integer() and 0 <= f < ds.num_classes:
        return int(f)
    raise ConfigError(
        f"{what} {t!r} is not a class of {ds.name} (0-{ds.num_classes - 1} or "
        f"{', '.join(ds.class_names)}); pick the --dataset the images were made for"
    )


def _value(text: str) -> Any:
    """A params cell as a number where it reads as one, else its text; None when empty."""
    t = text.strip()
    if not t:
        return None
    try:
        f = float(t)
    except ValueError:
        return t
    return int(f) if f.is_integer() and re.fullmatch(r"[+-]?\d+", t) else f


def _count(text: str, col: str) -> int | None:
    """An iteration count; None when empty. inf, NaN, fractions and negatives refused."""
    v = _value(text)
    if v is None or (isinstance(v, int) and 0 <= v <= MAX_ITERATIONS):
        return v
    if isinstance(v, float) and v.is_integer() and 0 <= v <= MAX_ITERATIONS:
        return int(v)  # "12.0"
    raise ConfigError(
        f"{col} {quote(text.strip())} is not a count of generations; expected a whole number "
        f"from 0 to {MAX_ITERATIONS:,}, or an empty cell"
    )


def _csv_files(folder: Path, m: ResultsMapping) -> list[Path]:
    """The files the mapping's `csv` pattern matches, each inside `folder`."""
    field = "the mapping's csv pattern"
    inside(folder, m.csv, field)  # "../x/*.csv", "/etc/*"
    try:
        found = sorted(p for p in folder.glob(m.csv) if p.is_file())
    except (NotImplementedError, ValueError) as e:  # an absolute or empty pattern
        raise ConfigError(
            f"{field} is {quote(m.csv)} ({e}); expected a pattern relative to {folder}, "
            "such as *.csv"
        ) from None
    for p in found:
        inside(folder, p.relative_to(folder), "results file", source=field)
    return found


def read_results(folder: Path, m: ResultsMapping, ds: Dataset, max_rows: int = MAX_ROWS):
    """The CSV rows as per-image records (labels parsed, image paths resolved) and the
    CSV columns the mapping does not use. Raises ConfigError naming file and row."""
    files = _csv_files(folder, m)
    if not files:
        found = sorted(p.name for p in folder.iterdir())[:10]
        raise ConfigError(
            f"no file matching {m.csv!r} in {folder} (found {found}); "
            "expected the tool's results CSV there"
        )
    inside(folder, m.images, "the mapping's images folder")
    records, ignored = [], []
    for path in files:
        df = read_table(path, None, max_rows)
        df = df.loc[
            :, [c for c in df.columns if not c.startswith("Unnamed:") or df[c].ne("").any()]
        ]
        by_norm = {_norm(c): c for c in df.columns}
        wanted = m.columns()
        missing = [col for col in wanted.values() if _norm(col) not in by_norm]
        if missing:
            raise ConfigError(
                f"{path}: columns {missing} not found; the file has "
                f"{quote(list(df.columns), HEADER_QUOTE)}, the mapping expects "
                f"{list(wanted.values())}. Pass a mapping file (--mapping) naming the right "
                "columns."
            )
        col = {k: by_norm[_norm(v)] for k, v in wanted.items()}
        used = set(col.values())
        ignored += [c for c in df.columns if c not in used and c not in ignored]
        df = df[df.ne("").any(axis=1)]
        for line, r in df.iterrows():
            where = f"{path.name}, data row {line + 1}"
            try:
                it = r[col["iteration"]] if "iteration" in col else ""
                rec = {
                    "expected": class_index(r[col["expected"]], ds, "expected label"),
                    "predicted": class_index(r[col["predicted"]], ds, "predicted label"),
                    "iterations": _count(it, col.get("iteration", "")),
                    "image": find_image(folder, m.images, r[col["image"]], "image file"),
                    "seed_image": find_image(
                        folder, m.images, r[col["seed_image"]], "seed image file"
                    )
                    if "seed_image" in col and r[col["seed_image"]].strip()
                    else None,
                    "preset": r[col["preset"]].strip() if "preset" in col else None,
                    "params": {k: _value(r[col[f"params.{k}"]]) for k in m.params}
                    | {"file": r[col["image"]].strip(), "csv": printable(path.name)},
                }
            except (ConfigError, ValueError) as e:
                # A path outside the folder stays an UntrustedFileError, with its row.
                kind = type(e) if isinstance(e, UntrustedFileError) else ConfigError
                raise kind(f"{where}: {e}") from e
            records.append(rec)
    if not records:
        raise ConfigError(f"{', '.join(map(str, files))}: a header but no rows")
    return records, files, ignored


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
    records, files, ignored = read_results(folder, mapping, ds, max_rows)
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
            for key, out in (("image", "result.png"), ("seed_image", "seed.png")):
                if rec[key] is not None:
                    img, kind = read_image(rec[key], ds.shape)
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
    return ImportResult(cid, len(records), mis, kinds, ignored)


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
            "final_pred": pa.array(predicted),
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
