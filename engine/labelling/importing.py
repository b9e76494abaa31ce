"""Importing a study run elsewhere (a crowdsourcing platform, a spreadsheet).

The file has one row per image and one answer column per assessor. Answers are class
labels (index or name) or free text meaning "not a valid image"; our verdict rules are
applied to them, and the file's own verdict columns, when present, are only cross-checked.
The default mapping fits the header such studies commonly use:

    Image URL,ID,DATASET,TOOL,MUT_EXT,ITER,Expected,Predicted,ASS 1,ASS 2,
    Misclass Human 1,Misclass Human 2,Valid Human 1,Valid Human 2,Validity?,Label Preservation?
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from engine.core.csv_io import MAX_ROWS, read_table
from engine.core.errors import ConfigError
from engine.core.untrusted import HEADER_QUOTE, inside, quote
from engine.core.yaml_io import read_mapping
from engine.datasets import Dataset, get_dataset, printable
from engine.labelling import agreement, icst_images
from engine.labelling import exchange as label_exchange
from engine.labelling.agreement import INVALID, OTHER, UNSURE
from engine.labelling.validity import new_study_id
from engine.labelling.verdict_columns import cross_check
from store import Store
from store import labels as label_store


class ImportMapping(BaseModel, frozen=True):
    """Which column holds what, and which answer texts mean invalid or unsure."""

    image: str = "Image URL"
    id: str = "ID"
    dataset: str | None = "DATASET"
    generator: str = "TOOL"
    perturbation: str = "MUT_EXT"
    iteration: str | None = "ITER"
    expected: str = "Expected"
    predicted: str | None = "Predicted"
    assessors: list[str] = Field(default_factory=lambda: ["ASS 1", "ASS 2"])
    validity: str | None = "Validity?"
    preservation: str | None = "Label Preservation?"
    # Matched case-insensitively after trimming; any text starting "not a" also counts.
    invalid_texts: list[str] = Field(
        default_factory=lambda: [
            "not a digit",
            "not a real-world object",
            "not a valid image",
            "invalid",
            "none",
            "no digit",
            "not valid",
            "garbage",
            "noise",
        ]
    )
    unsure_texts: list[str] = Field(
        default_factory=lambda: ["unsure", "don't know", "dont know", "not sure", "?"]
    )
    # Valid, but none of the dataset's classes; any text starting "a different" also counts.
    other_texts: list[str] = Field(
        default_factory=lambda: [
            "a different real-world object",
            "a different real world object",
            "other class",
            "another class",
            "a different object",
            "different class",
        ]
    )

    @classmethod
    def from_yaml(cls, path: Path) -> ImportMapping:
        data = read_mapping(path, "mapping file")
        if unknown := sorted(set(data) - set(cls.model_fields)):
            # A misspelt key was ignored, and the import went on with the default column.
            raise ConfigError(
                f"mapping file {path} has unknown keys {unknown}; its keys are "
                f"{', '.join(cls.model_fields)}"
            )
        return cls.model_validate(data)


@dataclass
class ImportResult:
    study_id: str
    rows: int
    judgements: int
    empty_cells: int
    disagreements: pd.DataFrame = field(default_factory=pd.DataFrame)
    shape: str | None = None  # "wide" or "raw" for a latentfuzz export, None for a mapping
    assumed: str = ""  # study settings the file did not carry, in words
    adjudications: int = 0
    images: icst_images.Links | None = None  # with `images`: which rows got their image


def parse_answer(text: object, ds: Dataset, m: ImportMapping) -> int | None:
    """A class index, INVALID, OTHER or UNSURE; None for an empty cell. Raises on unknown
    text. Numbers are class indices, or taxonomy ids (ImageNet's) for a subset dataset,
    where an id outside the subset is a valid image of another class (OTHER)."""
    if text is None or (isinstance(text, float) and np.isnan(text)):
        return None
    t = str(text).strip()
    if not t:
        return None
    low = t.lower()
    if low in {s.lower() for s in m.invalid_texts} or low.startswith("not a"):
        return INVALID
    if low in {s.lower() for s in m.unsure_texts}:
        return UNSURE
    if low in {s.lower() for s in m.other_texts} or low.startswith("a different"):
        return OTHER
    names = {n.lower(): i for i, n in enumerate(ds.class_names)}
    if low in names:
        return names[low]
    try:
        f = float(t)
    except ValueError:
        f = None
    if f is not None and f.is_integer():
        if ds.class_ids is not None:
            if int(f) in ds.class_ids:
                return ds.class_ids.index(int(f))
            if 0 <= f < (ds.taxonomy_size or 0):
                return OTHER
        elif 0 <= f < ds.num_classes:
            return int(f)
    ids = "" if ds.class_ids is None else f" (ids {', '.join(map(str, ds.class_ids))})"
    raise ConfigError(
        f"answer {t!r} is neither a class of {ds.name} ({', '.join(ds.class_names)}{ids}) "
        f"nor a known text for invalid ({', '.join(m.invalid_texts)}), another class "
        f"({', '.join(m.other_texts)}) or unsure; add it to invalid_texts, other_texts or "
        "unsure_texts in a mapping file (--mapping), or pick the right --dataset"
    )


def _class_or_none(a: int | None) -> int | None:
    return a if a is not None and a >= 0 else None


def import_csv(
    store: Store,
    path: Path,
    dataset: str,
    mapping: ImportMapping | None = None,
    name: str | None = None,
    seed: int = 0,
    encoding: str | None = None,
    max_rows: int = MAX_ROWS,
    again: bool = False,
    file_name: str | None = None,
    home: Path | None = None,
    images: Path | None = None,
) -> ImportResult:
    """Create a study from an external CSV; everything is checked before anything is written.
    Its image paths must lie inside `home` (default: the store's folder), which the pages
    show them from.
    The same file, dataset and mapping imported a second time is refused unless `again`:
    two studies of one file count its answers twice in every report that pools them.
    The study is named `name`, else (our exports) the exported study's name, else
    `file_name` (the name an upload had), else the file's.
    With `images` (a genai_tigs folder such as generated_images/mnist), each row is linked
    to its image there, converted to a PNG in the study's folder of the home
    (engine/labelling/icst_images.py); rows with no single match keep the file's name."""
    # A name that is not UTF-8 (a Latin-1 disk's) as \xNN: the store holds text only.
    file_name = printable(file_name or Path(path).name)
    home = Path(home) if home is not None else Path(store.path).parent
    m = mapping or ImportMapping()
    ds = get_dataset(dataset)
    if Path(path).exists() and not (Path(path).is_file() or Path(path).is_dir()):
        # Hashed, then read: /dev/zero was hashed for ever, and a pipe (`<(gunzip -c x)`)
        # is empty the second time. A folder keeps the error reading it gives.
        raise ConfigError(
            f"{path} is no regular file (a pipe or a device); expected a CSV file: save it "
            "to a file first (e.g. `gunzip -c study.csv.gz > study.csv`)"
        )
    key = import_key(path, ds.name, m, encoding)
    if not again and (earlier := label_store.imported_validity_study(store, key)) is not None:
        raise ConfigError(
            f"{path} was imported already, with this dataset and mapping, as study "
            f"{earlier['id']} ({earlier['name']!r}, {str(earlier['created_at'])[:16]}); "
            "pass --again to import it as another study"
        )
    df = read_table(path, encoding, max_rows)  # streamed, bounded, encoding and rows checked
    # A trailing comma in the header gives an unnamed, empty column: drop it.
    df = df.loc[:, [c for c in df.columns if not c.startswith("Unnamed:") or df[c].ne("").any()]]
    if mapping is None and (shape := label_exchange.detect(list(df.columns))):
        if images is not None:
            raise ConfigError(
                f"{path} is a latentfuzz {shape} export, whose images are named in it; "
                "--images links the rows of an ICST study file: drop --images"
            )
        return _import_own(store, path, df, shape, ds, name, file_name, key, home)
    needed = [m.image, m.id, m.generator, m.perturbation, m.expected, *m.assessors]
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ConfigError(
            f"{path}: columns {missing} not found; the file has "
            f"{quote(list(df.columns), HEADER_QUOTE)}. "
            "Pass a mapping file (--mapping) naming the right columns."
        )
    df = df[df.ne("").any(axis=1)]  # blank lines at the end of a spreadsheet export
    if df.empty:
        raise ConfigError(f"{path} has a header but no rows")

    def cell(col: str | None, r: pd.Series) -> str | None:
        """The trimmed text of an optional column; None when absent or empty."""
        if col is None or col not in df.columns or not r[col].strip():
            return None
        return r[col].strip()

    def label(col: str | None, r: pd.Series) -> int | None:
        return parse_answer(cell(col, r), ds, m)

    def number(col: str | None, r: pd.Series) -> int | None:
        text = cell(col, r)
        try:
            return None if text is None else int(float(text))
        except ValueError:
            raise ConfigError(f"{col} {text!r} is not a number") from None

    items, judged, empty, named = [], [], 0, []
    now = datetime.now()
    first_row: dict[str, int] = {}  # ID -> the data row that has it
    for item_id, (line, r) in enumerate(df.iterrows()):
        if (was := first_row.setdefault(r[m.id].strip(), line + 1)) != line + 1:
            # Two rows of one image: each would count as its own image in every figure.
            raise ConfigError(
                f"{path}, data rows {was} and {line + 1} have the same {m.id} "
                f"{r[m.id].strip()!r}; give each image one row"
            )
        inside(home, r[m.image].strip(), f"{m.image} of data row {line + 1}", source=str(path))
        try:
            expected = label(m.expected, r)
            if expected is None or expected < 0:
                raise ConfigError(
                    f"expected label {r[m.expected]!r} is not a class of {ds.name} "
                    f"({', '.join(ds.class_names)}); pick the --dataset the images were "
                    "generated for"
                )
            # The image files are named by the numbers as written (ImageNet's ids, not ours).
            cols = (m.generator, m.perturbation, m.iteration, m.expected, m.predicted)
            named.append([r.get(c) if c else None for c in cols])
            items.append(
                {
                    "item_id": item_id,
                    "kind": "imported",
                    "generator": r[m.generator].strip(),
                    "preset": r[m.perturbation].strip(),
                    "image": r[m.image].strip(),
                    # A prediction outside a subset's classes has no index here.
                    "expected": expected,
                    "predicted": _class_or_none(label(m.predicted, r)),
                    "iterations": number(m.iteration, r),
                    "external_id": r[m.id].strip(),
                }
            )
            for pos, col in enumerate(m.assessors):
                a = parse_answer(r[col], ds, m)
                if a is None:
                    empty += 1
                    continue
                judged.append(
                    {
                        "item_id": item_id,
                        "labeller": col,
                        "answer": a,
                        "raw": str(r[col]).strip(),
                        "position": pos + 1,
                        "answered_at": now,
                    }
                )
        except (ConfigError, ValueError) as e:
            raise ConfigError(f"{path}, data row {line + 1} (ID {r[m.id]!r}): {e}") from e
    items_df = pd.DataFrame(items)
    j = pd.DataFrame(
        judged, columns=["item_id", "labeller", "answer", "raw", "position", "answered_at"]
    )
    k = len(m.assessors)
    v = agreement.verdicts(items_df, j, pd.DataFrame(), k, "icst")
    disagreements = cross_check(df, v, m)
    sid = new_study_id()
    # Every image file is read and checked before anything is written.
    links, pngs = icst_images.prepare(Path(images), named, items, ds) if images else (None, {})
    study = {
        "id": sid,
        "name": name or file_name,
        "dataset": ds.name,
        "source": "import",
        "k": k,
        "rule": "icst",
        "seed": seed,
        "resamples": 1000,
        "config": {"file": printable(path), "mapping": m.model_dump(), "import_key": key},
    }
    if links is not None:
        study["config"]["images"] = printable(Path(images).resolve())
        written = icst_images.write(home, sid, pngs)
        items_df["image"] = [written.get(i, x) for i, x in enumerate(items_df["image"])]
    try:
        label_store.create_validity_study(store, study, items_df, j)
    except BaseException:
        if links is not None:  # the PNGs of a study the store refused belong to nothing
            shutil.rmtree(home / "studies" / sid, ignore_errors=True)
        raise
    return ImportResult(sid, len(items_df), len(j), empty, disagreements, images=links)


def _import_own(store, path, df, shape, ds, name, file_name, key, home) -> ImportResult:
    """A latentfuzz export read back as the study it was (engine/labelling/exchange.py); the
    study's own seed and resamples, so that its intervals come out the same."""
    df = df[df.ne("").any(axis=1)]
    if df.empty:
        raise ConfigError(
            f"{path} has a header but no rows"
            + (
                ": a raw export of a study nobody has answered yet; export the study with --wide "
                "(one row per image) to move its images"
                if shape == "raw"
                else ""
            )
        )
    m = ImportMapping()

    def parse(text: str) -> int:
        """An answer as our exports write it; the mapping's texts are no fix here."""
        try:
            return parse_answer(text, ds, m)
        except ConfigError:
            raise ConfigError(
                f"answer {text!r} is neither a class of {ds.name} ({', '.join(ds.class_names)}) "
                "nor an answer latentfuzz writes (not a valid …, a different …, unsure); "
                "correct the cell, or pick the --dataset the study was made for"
            ) from None

    try:
        x = label_exchange.read(df, shape, ds, parse)
    except ConfigError as e:
        raise ConfigError(f"{path}, a latentfuzz {shape} export: {e}") from None
    for item, image in zip(x.items["item_id"], x.items["image"], strict=True):
        if isinstance(image, str):
            inside(home, image, f"image of item {item}", source=str(path))
    v = agreement.verdicts(x.items, x.judgements, x.adjudications, x.k, x.rule)
    own = ImportMapping(id="item_id", validity="validity", preservation="preservation")
    disagreements = cross_check(x.verdict_rows, v, own)
    sid = new_study_id()
    study = {
        "id": sid,
        "name": name or x.name or file_name,
        "dataset": ds.name,
        "source": "import",
        "k": x.k,
        "rule": x.rule,
        "seed": x.seed,
        "resamples": x.resamples,
        "config": {"file": printable(path), "format": f"latentfuzz {shape}", "import_key": key},
    }
    label_store.create_validity_study(store, study, x.items, x.judgements, x.adjudications)
    return ImportResult(
        sid,
        len(x.items),
        len(x.judgements),
        0,
        disagreements,
        shape,
        x.assumed,
        len(x.adjudications),
    )


def import_key(path: Path, dataset: str, m: ImportMapping, encoding: str | None = None) -> str:
    """What makes two imports the same: the file's bytes (not its name: a copy is the same
    study), the encoding they are read in, the dataset and the mapping."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    h.update(json.dumps([dataset, m.model_dump(), encoding], sort_keys=True).encode())
    return h.hexdigest()
