"""Issue acceptance: the documented command, twice, through the real CLI."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from store import Store
from store import campaigns as sc
from tests.helpers import CLI

COMMAND = [
    "run",
    "--dataset",
    "mnist",
    "--generator",
    "vae",
    "--seeds",
    "10",
    "--generations",
    "250",
    "--perturbation",
    "high",
    "--seed",
    "1",
    "--quiet",
]


def test_documented_command_is_complete_and_reproducible(tmp_path: Path, env):
    outcomes = []
    for name in ("first", "second"):
        home = tmp_path / name
        p = subprocess.run(
            [*CLI, *COMMAND, "--home", str(home)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert p.returncode == 0, p.stderr
        out = " ".join(p.stdout.split())
        status = (
            r"viable seeds \d+ of 10, misclassified \d+ \([\d.]+% of viable\), "
            r"mean iterations \(viable seeds, survivors at budget\) [\d.]+, "
            r"mean iterations to failure \(failing seeds\) [\d.]+"
        )
        assert re.search(status, out), out
        store = Store(home / "latentfuzz.duckdb")
        (cid,) = sc.list_campaigns(store)["id"]
        seeds = sc.seeds(store, cid)
        gens = sc.generations(store, cid)
        viable = seeds[seeds.viable]
        # One generations row per seed per generation that ran.
        counts = gens.groupby("seed_idx").size()
        assert counts.to_dict() == viable.set_index("seed_idx")["iterations"].to_dict()
        outcomes.append(
            seeds[
                [
                    "seed_idx",
                    "source_index",
                    "seed_label",
                    "viable",
                    "status",
                    "iterations",
                    "final_pred",
                    "final_fitness",
                ]
            ]
        )
    assert outcomes[0].equals(outcomes[1])
