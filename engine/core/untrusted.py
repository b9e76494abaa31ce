"""The one gate for paths and sizes that come from files the user did not write.

A bundle's path columns, a study CSV's image URLs, an ONNX file's external data, a
Stable Diffusion pipeline's components and a result import's globs are all written by
someone else. Each such path is resolved (symlinks followed, `..` collapsed) and checked
against the folder it may come from before anything is read, copied or written; anything
outside is refused in one line naming the field and the path. Sizes declared by such a
file (image sides, array shapes, manifest and entry lengths) are checked against a bound
before anything is allocated.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path

from engine.core.errors import LatentfuzzError

#: Longest value quoted in an error message: a 100 MB campaign name is not echoed whole.
QUOTE_LIMIT = 120
#: Longest CSV header quoted: the ICST study's 16 columns (about 230 characters) show
#: whole, so that the user sees which column is there; a 44 KB header is cut.
HEADER_QUOTE = 1000


class UntrustedFileError(LatentfuzzError, ValueError):
    """A file from elsewhere points outside its folder, or declares a size beyond a bound."""


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """`repr(value)`, cut to `limit` characters with the full length said: for error
    messages that echo what was received."""
    text = repr(value) if not isinstance(value, Path) else repr(str(value))
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def inside(
    root: str | os.PathLike[str],
    path: str | os.PathLike[str],
    field: str,
    *,
    source: str = "",
) -> Path:
    """`path` resolved, when it lies inside `root` (a relative `path` is taken from
    `root`); else UntrustedFileError naming `field` (the column, key or entry) and the
    path, and `source` (the file it came from) when given.

    Absolute paths are accepted only when they resolve inside `root`; `..` and symlinks
    are judged by where they lead, not by how they are spelt."""
    root_r = Path(root).resolve()
    raw = os.fspath(path)
    if "\x00" in raw:
        raise UntrustedFileError(_outside_message(field, raw, root_r, source, "holds a NUL byte"))
    candidate = Path(raw)
    full = (candidate if candidate.is_absolute() else root_r / candidate).resolve()
    if full != root_r and root_r not in full.parents:
        raise UntrustedFileError(_outside_message(field, raw, root_r, source))
    return full


def inside_any(
    roots: Iterable[str | os.PathLike[str]],
    path: str | os.PathLike[str],
    field: str,
    *,
    source: str = "",
) -> Path:
    """`inside` for a path that may lie under any of several roots (the first root is
    the one a relative path is taken from)."""
    roots = [Path(r) for r in roots]
    first: UntrustedFileError | None = None
    for r in roots:
        try:
            return inside(r, path, field, source=source)
        except UntrustedFileError as e:
            first = first or e
            if not Path(os.fspath(path)).is_absolute():
                break  # a relative path is read from the first root only
    assert first is not None, "inside_any needs at least one root"
    raise first


def _outside_message(field: str, raw: str, root: Path, source: str, why: str = "") -> str:
    where = f" in {source}" if source else ""
    what = why or f"lies outside {root}"
    return (
        f"{field}{where} is {quote(raw)}, which {what}; a shared file may only name files "
        f"inside its own folder: ask its author for a copy with relative paths"
    )


def bounded(value: float, limit: float, field: str, *, unit: str = "", fix: str = "") -> float:
    """`value` when finite and at most `limit`, else UntrustedFileError in one line: for
    sizes declared by a file or an option before anything that size is allocated."""
    ok = isinstance(value, (int, float)) and math.isfinite(value) and value <= limit
    if ok:
        return value
    unit = f" {unit}" if unit else ""
    fix = fix or "check the file: it may be damaged, or made to exhaust memory"
    raise UntrustedFileError(
        f"{field} is {quote(value)}{unit}, expected at most {limit:,}{unit}; {fix}"
    )
