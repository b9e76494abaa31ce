"""Start-up of a campaign, as a user meets it: seconds from the command to its first
generation, and to its exit, for the bundled VAE, GAN and DM (issue 34).

Each figure is a fresh `latentfuzz run --seeds 1 --generations 1` process (imports, typer,
model loading, the store, the close): the first generation is the CLI's stamp in
$LATENTFUZZ_FIRST_GENERATION_FILE, written at its first progress report. A first, untimed
run per generator warms the home (the batch-size sweep is cached there, unless
$LATENTFUZZ_BATCH_SIZE pins it) and the OS's file cache, so the figures are the warm ones a
user sees from the second campaign on.

    python -m engine.bench.startup [--generators vae,gan,dm] [--repeats 3] [--home DIR]

Prints one line per generator: the median of the repeats, with the load average beside
it (the machine is shared: a figure without its load says little).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIRST_GENERATION_ENV = "LATENTFUZZ_FIRST_GENERATION_FILE"
CLI = [sys.executable, "-m", "engine.entry"]  # the installed script's entry: its imports too
GENERATORS = ("vae", "gan", "dm")


def one_run(generator: str, home: Path, timeout: float = 600.0) -> dict[str, float]:
    """One 1-seed, 1-generation campaign of `generator` in `home`: seconds from the command
    to its first generation (`first_s`) and to its exit (`exit_s`)."""
    stamp = home / f".first-generation-{generator}"
    stamp.unlink(missing_ok=True)
    env = {**os.environ, FIRST_GENERATION_ENV: str(stamp), "LATENTFUZZ_HOME": str(home)}
    args = ["run", "--generator", generator, "--seeds", "1", "--generations", "1"]
    start = time.time()
    p = subprocess.run(
        [*CLI, *args, "--quiet"], env=env, capture_output=True, text=True, timeout=timeout
    )
    end = time.time()
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip()[-400:]
        raise RuntimeError(f"latentfuzz {' '.join(args)} exited {p.returncode}: {tail}")
    return {"first_s": float(stamp.read_text()) - start, "exit_s": end - start}


def startup(
    generators: tuple[str, ...] = GENERATORS, repeats: int = 3, home: Path | None = None
) -> list[dict[str, object]]:
    """Per generator: the median seconds to first generation and to exit over `repeats`
    warm runs, each run's figures, and the load average before the first. In `home` (a
    temporary one, removed after, when None)."""
    own = home is None
    root = Path(tempfile.mkdtemp(prefix="latentfuzz-startup-")) if own else Path(home)
    root.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, object]] = []
    try:
        for g in generators:
            one_run(g, root)  # warm: the batch sweep's cache, the file cache
            load = os.getloadavg()[0]
            runs = [one_run(g, root) for _ in range(max(1, repeats))]
            rows.append(
                {
                    "generator": g,
                    "first_s": statistics.median(r["first_s"] for r in runs),
                    "exit_s": statistics.median(r["exit_s"] for r in runs),
                    "runs": runs,
                    "load": load,
                }
            )
    finally:
        if own:
            shutil.rmtree(root, ignore_errors=True)
    return rows


def describe(rows: list[dict[str, object]]) -> list[str]:
    """The figures as lines, e.g. 'vae: first generation 2.41 s, exit 2.77 s (median of 3,
    load 1.2)'."""
    return [
        f"{r['generator']}: first generation {r['first_s']:.2f} s, exit {r['exit_s']:.2f} s "
        f"(median of {len(r['runs'])}, load {r['load']:.1f})"  # type: ignore[arg-type]
        for r in rows
    ]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m engine.bench.startup", description=__doc__)
    ap.add_argument("--generators", default=",".join(GENERATORS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--home", type=Path, default=None, help="a home to warm and reuse")
    a = ap.parse_args(argv)
    gens = tuple(g for g in a.generators.split(",") if g)
    pinned = os.environ.get("LATENTFUZZ_BATCH_SIZE")
    print(
        "batch size: "
        + (f"pinned by $LATENTFUZZ_BATCH_SIZE={pinned}" if pinned else "measured, then cached")
    )
    for line in describe(startup(gens, a.repeats, a.home)):
        print(line)


if __name__ == "__main__":
    main()
