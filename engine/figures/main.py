"""`python -m engine.figures [--only NAME,...] [--quick] [--out DIR]` (`make figures`):
run each figure's measurement in a fresh home of its own and write its fragment to
docs/figures/NAME.md (or DIR), stamped with the commit, the date and the command.

Full size is what the docs quote (minutes to hours on a 2-core CPU); `--quick` runs each
figure at a test's size, for checking the scripts, never for quoting.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from engine.core import threads
from engine.core.errors import LatentfuzzError
from engine.figures import FIGURES
from engine.figures.base import FRAGMENTS, fragment


def write(path: Path, text: str) -> None:
    """Replace `path` whole: a figure that fails midway leaves the old fragment."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def run(names: list[str], out: Path, quick: bool, keep: Path | None = None) -> list[Path]:
    """Build and write each named figure; returns the fragments written. `keep`: each
    figure's home is kept under it (keep/NAME), to open its campaigns in the dashboard."""
    written = []
    for name in names:
        fig = FIGURES.get(name)
        if keep is not None:
            home = keep / name
            home.mkdir(parents=True, exist_ok=False)
            body = fig.build(home, quick)
        else:
            with tempfile.TemporaryDirectory(prefix=f"figure-{name}-") as tmp:
                body = fig.build(Path(tmp), quick)
        path = out / f"{name}.md"
        write(path, fragment(name, body, fig.command(quick), quick))
        written.append(path)
        print(f"wrote {path}", flush=True)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m engine.figures", description=__doc__)
    ap.add_argument("--only", default="", help="comma-separated figure names (default: all)")
    ap.add_argument("--quick", action="store_true", help="a test's size, not for quoting")
    ap.add_argument("--out", type=Path, default=FRAGMENTS, help="folder of the fragments")
    ap.add_argument("--list", action="store_true", help="print the figures' names and commands")
    ap.add_argument("--keep", type=Path, help="keep each figure's home as KEEP/NAME (a new folder)")
    args = ap.parse_args(argv)
    if args.list:
        for name in FIGURES.names():
            print(f"{name}: {FIGURES.get(name).command(args.quick)}")
        return 0
    names = [n.strip() for n in args.only.split(",") if n.strip()] or FIGURES.names()
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        print(
            f"error: figure {', '.join(unknown)} unknown; expected one of "
            f"{', '.join(FIGURES.names())} (make figures ONLY=NAME)",
            file=sys.stderr,
        )
        return 2
    threads.apply(threads.choose().threads)
    try:
        run(names, args.out, args.quick, args.keep)
    except FileExistsError as e:
        print(f"error: --keep {e.filename} exists; expected a new folder", file=sys.stderr)
        return 2
    except LatentfuzzError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
