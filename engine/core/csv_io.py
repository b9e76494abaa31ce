"""CSV in and out, safely: every CSV latentfuzz writes goes through ``to_csv`` and every CSV
it reads through ``read_table``.

Out: a cell that starts with ``=``, ``+``, ``-`` or ``@`` (or a tab or carriage return) is
a formula to a spreadsheet (``=HYPERLINK(...)`` in a labeller's name). As OWASP recommends,
such text cells get a leading single quote; numbers are left alone.

In: the file is streamed row by row, up to a stated row limit, so a huge file costs
memory in proportion to the limit, not to its size; the encoding is detected from a
byte-order mark, or the error says which encoding to pass; ragged rows are refused with
their line numbers instead of silently shifting columns.
"""

from __future__ import annotations

import codecs
import csv
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pandas as pd

from engine.core.errors import ConfigError

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: Rows read by default; `--max-rows` raises it.
MAX_ROWS = 100_000
#: Most columns a header may have: a 0.9 MB header of 100,000 names kept `labels import`
#: busy for minutes, and one line of a billion commas is a billion cells.
MAX_COLUMNS = 10_000
#: Longest physical line read (characters): checked before csv splits it into cells.
MAX_LINE = 16 * 2**20


def neutralise_cell(v: object) -> object:
    """A text cell that a spreadsheet would run as a formula, prefixed with a quote."""
    if isinstance(v, str) and v.startswith(FORMULA_STARTS):
        return "'" + v
    return v


def restore_cell(v: object) -> object:
    """The text neutralise_cell was given: what our own exports read back as."""
    if isinstance(v, str) and v.startswith("'") and v[1:].startswith(FORMULA_STARTS):
        return v[1:]
    return v


def neutralise(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of df with every text cell neutralised (and text column names)."""
    out = df.copy()
    for c in out.columns:
        if out[c].dtype == object or pd.api.types.is_string_dtype(out[c]):
            out[c] = out[c].map(neutralise_cell)
    out.columns = [neutralise_cell(c) if isinstance(c, str) else c for c in out.columns]
    return out


def to_csv(df: pd.DataFrame, path: str | Path | None = None) -> str | None:
    """df as CSV text (path None) or into a file, formula cells neutralised, no index."""
    return neutralise(df).to_csv(path, index=False)


def to_csv_bytes(df: pd.DataFrame) -> bytes:
    """The same, as UTF-8 bytes for a download button."""
    return to_csv(df).encode()


def _encoding(path: Path, given: str | None) -> str:
    """The encoding to read with: the one given, else from a byte-order mark, else UTF-8.
    Raises ConfigError for a binary file, naming the fix."""
    if given:
        try:
            codecs.lookup(given)
        except LookupError:
            raise ConfigError(
                f"encoding {given!r} is unknown; expected e.g. utf-8, utf-16, latin-1, cp1252"
            ) from None
        return given
    with open(path, "rb") as f:
        head = f.read(65536)
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if b"\x00" in head:
        odd = head[1::2]
        if head and odd.count(0) > 0.4 * len(odd):
            raise ConfigError(
                f"{path} looks like UTF-16 without a byte-order mark; pass --encoding utf-16-le "
                "(or utf-16-be), or re-save it as UTF-8"
            )
        raise ConfigError(f"{path} is a binary file, not a CSV text file; export it as CSV")
    return "utf-8"


def _names(header: list[str]) -> list[str]:
    """Column names as pandas gives them: 'Unnamed: i' for empty ones, 'X.1' for repeats."""
    out: list[str] = []
    taken: set[str] = set()
    tried: dict[str, int] = {}  # the last suffix each repeated name reached
    for i, h in enumerate(header):
        name = h if h.strip() else f"Unnamed: {i}"
        base, k = name, tried.get(name, 0)
        while name in taken:
            k += 1
            name = f"{base}.{k}"
        tried[base] = k
        out.append(name)
        taken.add(name)
    return out


def _lines(f: TextIO, path: Path) -> Iterator[str]:
    """f's lines, refused (one line) when one is longer than MAX_LINE: csv holds a whole
    record in memory, a gigabyte of commas as that many cells."""
    while line := f.readline(MAX_LINE + 1):
        if len(line) > MAX_LINE:
            raise ConfigError(
                f"{path} has a line longer than {MAX_LINE:,} characters; expected a CSV "
                "table: check that it is one (it may be damaged, or made to exhaust memory)"
            )
        yield line


def read_table(
    path: str | Path, encoding: str | None = None, max_rows: int = MAX_ROWS
) -> pd.DataFrame:
    """A CSV file as a DataFrame of strings (empty cells are ''), checked row by row.

    Raises ConfigError (one line: what, where, the fix) for an undecodable or binary
    file, a ragged row, a malformed row, or more than max_rows data rows."""
    path = Path(path)
    enc = _encoding(path, encoding)
    rows: list[list[str]] = []
    header: list[str] | None = None
    ragged: list[str] = []
    line = 0
    try:
        with open(path, encoding=enc, newline="") as f:
            reader = csv.reader(_lines(f, path))
            for cells in reader:
                line = reader.line_num
                if header is None:
                    if len(cells) > MAX_COLUMNS:
                        raise ConfigError(
                            f"{path} has {len(cells):,} columns, expected at most "
                            f"{MAX_COLUMNS:,}; check that it is the study's table"
                        )
                    header = cells
                    continue
                if not cells or not any(c.strip() for c in cells):
                    continue  # a blank line
                if len(cells) != len(header):
                    ragged.append(f"line {line} has {len(cells)}")
                    if len(ragged) >= 5:
                        break
                    continue
                if len(rows) >= max_rows:
                    raise ConfigError(
                        f"{path} has more than {max_rows:,} data rows (the limit); raise it "
                        "with --max-rows N, or split the file"
                    )
                rows.append(cells)
    except UnicodeDecodeError as e:
        hint = " or --encoding utf-16" if enc.startswith("utf-8") else ""
        raise ConfigError(
            f"{path} is not {enc} text (byte 0x{e.object[e.start]:02x} after line {line}); "
            f"pass --encoding latin-1 (or cp1252){hint}, or re-save the file as UTF-8"
        ) from None
    except csv.Error as e:
        raise ConfigError(f"{path}, line {line + 1}: not valid CSV ({e})") from None
    if header is None:
        raise ConfigError(f"{path} is empty; expected a header row and data rows")
    if ragged:
        raise ConfigError(
            f"{path}: rows do not match the header's {len(header)} columns ("
            + "; ".join(ragged)
            + "); fix those rows (a missing or extra comma, an unquoted comma in a cell)"
        )
    return pd.DataFrame(rows, columns=_names(header), dtype=str)
