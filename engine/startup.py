"""A dashboard-launched campaign's start-up steps, written where the page can read them.

Between Launch and the campaign's first row the process imports torch and loads the
models: 9 to 12 s with no sign of life on a busy machine. `latentfuzz run --id ID` (how
the dashboard launches) appends one line per step to `<home>/launch/<ID>.steps`:
`<seconds since the epoch>\\t<step>`. Stdlib only, so the first step is written before
the heavy imports it announces.
"""

from __future__ import annotations

import time
from pathlib import Path

#: The steps before the campaign's row exists, in order; the page shows them as a
#: checklist and a progress bar. The Campaign page takes over from the row on (seeds).
STEPS = ("importing torch and the engine", "loading the models and checking the config")


def steps_path(home: Path, campaign_id: str) -> Path:
    return Path(home) / "launch" / f"{campaign_id}.steps"


def report(home: Path, campaign_id: str | None, step: str) -> None:
    """Append `step` for a launched campaign; nothing for a campaign without a given id,
    and never an error (a read-only home only loses the report)."""
    if campaign_id is None:
        return
    try:
        path = steps_path(home, campaign_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as f:
            f.write(f"{time.time():.3f}\t{step}\n")
    except OSError:
        pass


def read(home: Path, campaign_id: str) -> list[tuple[float, str]]:
    """The steps reported so far, oldest first."""
    path = steps_path(home, campaign_id)
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        t, _, step = line.partition("\t")
        try:
            out.append((float(t), step))
        except ValueError:
            continue  # a line being written
    return out
