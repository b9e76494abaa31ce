"""What every figure shares: its registry, the fragment it writes and the stamp on it.

A figure is a function that runs its measurement in a home of its own and returns the
Markdown body (a table, usually). `write` puts it in ``docs/figures/NAME.md`` between a
do-not-edit line and a stamp (commit, date, command), and the docs include the fragment
where a page says ``<!-- generated: figure-NAME -->`` (docs/hooks.py).
"""

from __future__ import annotations

import datetime as dt
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.core import kernels
from engine.core.registry import Registry

#: The repository this package sits in: its commit stamps the fragments.
REPO = Path(__file__).resolve().parents[2]
#: Where the fragments go, the folder docs/hooks.py reads.
FRAGMENTS = REPO / "docs" / "figures"
#: The first line of every fragment.
HEADER = "<!-- Written by `make figures ONLY={name}`: edit the script, not this file. -->"


@dataclass(frozen=True)
class Figure:
    """A figure family: `build(home, quick)` returns the Markdown body; `command(quick)` is
    the latentfuzz command its numbers come from, as a reader would type it."""

    name: str
    build: Callable[[Path, bool], str]
    command: Callable[[bool], str]


FIGURES: Registry[Figure] = Registry("figure")


def figure(name: str, command: Callable[[bool], str]) -> Callable:
    """Register the decorated `build(home, quick) -> str` as figure `name`."""

    def deco(build: Callable[[Path, bool], str]) -> Callable[[Path, bool], str]:
        FIGURES.register(name)(Figure(name, build, command))
        return build

    return deco


def commit() -> str:
    """The checkout's commit (12 digits), '+' when it has uncommitted changes other than
    the fragments (a run of several figures writes them as it goes); 'unknown' outside a
    git checkout."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
        dirty = subprocess.run(
            [
                "git",
                "-C",
                str(REPO),
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                f":(exclude){FRAGMENTS.relative_to(REPO)}",
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+" if dirty else "")


def stamp(name: str, command: str, quick: bool, when: dt.date | None = None) -> str:
    """The line under a figure: commit, date, the regenerating command and what it ran."""
    day = (when or dt.datetime.now(dt.UTC).date()).isoformat()
    size = " (quick size: a test, not a figure to quote)" if quick else ""
    return (
        f"*Made at commit `{commit()}` on {day} with {kernels.in_use()} kernels by `make "
        f"figures ONLY={name}`, which runs `{command}`{size}.*"
    )


def fragment(name: str, body: str, command: str, quick: bool) -> str:
    """A fragment's whole text."""
    return f"{HEADER.format(name=name)}\n\n{body.strip()}\n\n{stamp(name, command, quick)}\n"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table; cells are written as given."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def number(x: float | None, spec: str) -> str:
    """`x` formatted, or 'n/a' for a missing or NaN value."""
    return "n/a" if x is None or x != x else format(x, spec)


def mean_sd(row: Mapping[str, Any], stem: str, spec: str, bold: bool = False) -> str:
    """'mean ± SD' of a summarised figure (columns STEM_mean, STEM_sd), the mean in bold
    where asked."""
    mean = number(row[f"{stem}_mean"], spec)
    return f"{f'**{mean}**' if bold else mean} ± {number(row.get(f'{stem}_sd'), spec)}"
