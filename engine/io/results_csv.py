"""Other tools' results CSVs read for `latentfuzz import-results`: the mapping that says
which column is which (engine/io/formats/ holds the built-in ones) and the rows parsed into
per-image records, labels checked and image paths resolved inside the results folder.

One format may name its columns in more than one way (GIFTbench's own header and the
ICST study's published one): a mapping's `variants` list the other column sets, and each
CSV file is read with the first set whose columns it has.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.core.csv_io import MAX_ROWS, read_table
from engine.core.errors import ConfigError
from engine.core.untrusted import HEADER_QUOTE, UntrustedFileError, inside, quote
from engine.core.yaml_io import read_mapping
from engine.datasets import Dataset, printable
from engine.io.result_images import PIXELS, find_image

FORMATS_DIR = Path(__file__).resolve().parent / "formats"
#: Most generations an imported image may say it took (the seeds' column is 32-bit).
MAX_ITERATIONS = 1_000_000_000
#: What `predicted` holds for a class of the taxonomy outside a subset dataset (an
#: ImageNet id that is none of imagenet-pizza's classes): a failure with no class index.
OTHER_CLASS = -1


class Constants(BaseModel):
    """Campaign fields the tool's CSV does not hold."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    strategy: str = "imported"
    classifier: str = "unknown"
    preset: str | None = None
    generations: int | None = Field(None, ge=1, description="the tool's generation budget")


class Columns(BaseModel):
    """Which CSV column holds what. Names match ignoring case, spaces, '_' and '-'."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    image: str = "file_name"
    expected: str = "expected"
    predicted: str = "predicted"
    iteration: str | None = "iteration"
    seed_image: str | None = None
    preset: str | None = None
    params: dict[str, str] = Field(default_factory=dict)

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


class ResultsMapping(Columns):
    """A results format: its files, its columns (and other sets of column names, tried in
    order for a CSV that lacks the first set's), how its .npy pixels are scaled, and the
    campaign fields the CSV lacks."""

    csv: str = "*.csv"
    images: str = "."
    pixels: Literal[PIXELS] = "auto"  # type: ignore[valid-type]
    variants: list[Columns] = Field(default_factory=list)
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

    def with_options(self, **given: str) -> ResultsMapping:
        """The mapping with the command line's --csv, --images, --pixels, validated."""
        if given.get("pixels", "auto") not in PIXELS:
            raise ConfigError(
                f"--pixels {quote(given['pixels'])} is no pixel scale; expected one of "
                f"{', '.join(PIXELS)}"
            )
        return self.model_copy(update=given)

    def column_sets(self) -> list[Columns]:
        """The mapping's own columns, then each variant's (keys a variant leaves out are
        the mapping's)."""
        own = Columns.model_validate({k: getattr(self, k) for k in Columns.model_fields})
        return [own] + [
            own.model_copy(update={k: getattr(v, k) for k in v.model_fields_set})
            for v in self.variants
        ]


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


# ----------------------------------------------------------------------------- parsing


def class_index(text: str, ds: Dataset, what: str, other_ok: bool = False) -> int:
    """A class index from an index or a class name (case-insensitive). For a subset of a
    taxonomy (ImageNet's) numbers are the taxonomy's ids, as the tools write them; with
    `other_ok`, an id outside the subset is OTHER_CLASS (the classifier named another
    class of the taxonomy)."""
    t = text.strip()
    names = {n.lower(): i for i, n in enumerate(ds.class_names)}
    if t.lower() in names:
        return names[t.lower()]
    try:
        f = float(t)
    except ValueError:
        f = None
    ids = ds.class_ids
    if f is not None and f.is_integer():
        if ids is None and 0 <= f < ds.num_classes:
            return int(f)
        if ids is not None and int(f) in ids:
            return ids.index(int(f))
        if ids is not None and other_ok and 0 <= f < (ds.taxonomy_size or 0):
            return OTHER_CLASS
    if ids is None:
        known = f"0-{ds.num_classes - 1} or {', '.join(ds.class_names)}"
    else:
        known = ", ".join(f"{n} ({i})" for n, i in zip(ds.class_names, ids, strict=True))
        known += f"; predicted labels may be any id below {ds.taxonomy_size}"
    raise ConfigError(
        f"{what} {quote(t)} is not a class of {ds.name} ({known}); pick the --dataset the "
        "images were made for"
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


def _columns_of(path: Path, header: list[str], m: ResultsMapping) -> dict[str, str]:
    """field -> the file's column, from the first column set whose columns it has."""
    by_norm = {_norm(c): c for c in header}
    sets = m.column_sets()
    for cols in sets:
        wanted = cols.columns()
        if all(_norm(v) in by_norm for v in wanted.values()):
            return {k: by_norm[_norm(v)] for k, v in wanted.items()}
    wanted = sets[0].columns()
    missing = [col for col in wanted.values() if _norm(col) not in by_norm]
    others = "".join(f", or {list(s.columns().values())}" for s in sets[1:])
    raise ConfigError(
        f"{path}: columns {missing} not found; the file has "
        f"{quote(header, HEADER_QUOTE)}, the mapping expects {list(wanted.values())}"
        f"{others}. Pass a mapping file (--mapping) naming the right columns."
    )


def read_results(folder: Path, m: ResultsMapping, ds: Dataset, max_rows: int = MAX_ROWS):
    """The CSV rows as per-image records (labels parsed, image paths resolved), the files
    read, the CSV columns the mapping does not use, and how many rows named no image and
    no labels (a summary line under the table). Raises ConfigError naming file and row."""
    files = _csv_files(folder, m)
    if not files:
        found = sorted(p.name for p in folder.iterdir())[:10]
        raise ConfigError(
            f"no file matching {m.csv!r} in {folder} (found {found}); "
            "expected the tool's results CSV there"
        )
    inside(folder, m.images, "the mapping's images folder")
    records, ignored, skipped = [], [], 0
    for path in files:
        df = read_table(path, None, max_rows)
        df = df.loc[
            :, [c for c in df.columns if not c.startswith("Unnamed:") or df[c].ne("").any()]
        ]
        col = _columns_of(path, list(df.columns), m)
        params = [k.removeprefix("params.") for k in col if k.startswith("params.")]
        used = set(col.values())
        ignored += [c for c in df.columns if c not in used and c not in ignored]
        df = df[df.ne("").any(axis=1)]
        # The ICST study's CSVs end in a line of column means under the table.
        unnamed = df[[col["image"], col["expected"], col["predicted"]]].eq("").all(axis=1)
        skipped += int(unnamed.sum())
        for line, r in df[~unnamed].iterrows():
            where = f"{printable(path.name)}, data row {line + 1}"
            try:
                records.append(_record(folder, m, ds, col, params, r, path))
            except (ConfigError, ValueError) as e:
                # A path outside the folder stays an UntrustedFileError, with its row.
                kind = type(e) if isinstance(e, UntrustedFileError) else ConfigError
                raise kind(f"{where}: {e}") from e
    if not records:
        raise ConfigError(f"{', '.join(map(str, files))}: a header but no rows")
    return records, files, ignored, skipped


def _record(folder, m, ds, col, params, r, path) -> dict[str, Any]:
    predicted = class_index(r[col["predicted"]], ds, "predicted label", other_ok=True)
    extra = {"file": r[col["image"]].strip(), "csv": printable(path.name)}
    if predicted == OTHER_CLASS:  # kept: the seeds' column holds class indices only
        extra["predicted_id"] = _value(r[col["predicted"]])
    seed = r[col["seed_image"]].strip() if "seed_image" in col else ""
    return {
        "expected": class_index(r[col["expected"]], ds, "expected label"),
        "predicted": predicted,
        "iterations": _count(r[col["iteration"]], col["iteration"]) if "iteration" in col else None,
        "image": find_image(folder, m.images, r[col["image"]], "image file"),
        "seed_image": find_image(folder, m.images, seed, "seed image file") if seed else None,
        # Perturbation presets are lower case ("High" in the ICST study's `run` column).
        "preset": r[col["preset"]].strip().lower() if "preset" in col else None,
        "params": {k: _value(r[col[f"params.{k}"]]) for k in params} | extra,
    }
