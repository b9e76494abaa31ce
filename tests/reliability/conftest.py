"""Helpers for the reliability tests: run the CLI, and check a bad input's error."""

from __future__ import annotations

import subprocess

from tests.helpers import CLI


def cli(
    args: list[str], env: dict[str, str], ok: bool = True, prefix: list[str] | None = None, **kw
) -> subprocess.CompletedProcess:
    p = subprocess.run(
        [*(prefix or []), *CLI, *args], env=env, capture_output=True, text=True, timeout=300, **kw
    )
    if ok:
        assert p.returncode == 0, p.stderr
    return p


def one_line_error(p: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit code 2, one line on stderr, no traceback, and every needle in that line."""
    lines = p.stderr.splitlines()
    assert p.returncode == 2, (p.returncode, p.stderr)
    # Exactly one line: an empty one before it (a progress bar's leftover) counts too.
    assert "Traceback" not in p.stderr and len(lines) == 1, p.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]
