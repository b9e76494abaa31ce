"""Start-up (engine/bench/startup.py): the figures it reports, and the lazy imports that keep
a small campaign's start short, guarded by what is imported when (counts, not times)."""

from __future__ import annotations

from pathlib import Path

from engine.bench import startup
from tests.helpers import entry_with_hook

#: `python -m engine.entry ARGS` with a spy: the first time one of WATCHED is imported it
#: notes whether the campaign had reached its first generation (the CLI's stamp file
#: exists), and at exit which top-level packages were ever imported.
HOOK = """
import atexit, json, os, runpy, sys

out, stamp = sys.argv.pop(1), os.environ["LATENTFUZZ_FIRST_GENERATION_FILE"]
seen = {}

class Spy:
    def find_spec(self, name, path=None, target=None):
        if name in ("pandas",) and name not in seen:
            seen[name] = os.path.exists(stamp)
        return None

def done():
    tops = sorted({m.split(".")[0] for m in sys.modules})
    with open(out, "w") as f:
        json.dump({"after_first_generation": seen, "imported": tops}, f)

sys.meta_path.insert(0, Spy())
atexit.register(done)
sys.argv[0] = "engine.entry"
runpy.run_module("engine.entry", run_name="__main__", alter_sys=True)
"""

#: Packages a VAE campaign on the CPU never needs: each is seconds of import (or an
#: optional extra) that a careless top-level import would put on every campaign.
NEVER = {
    "diffusers",
    "transformers",
    "onnx",
    "onnxruntime",
    "scipy",
    "sklearn",
    "skimage",
    "umap",
    "numba",
    "matplotlib",
    "streamlit",
    "ray",
    "pymoo",
}


def test_a_vae_campaign_never_imports_pandas_nor_the_extras(
    home: Path, tmp_path: Path, env: dict[str, str]
):
    env = {**env, startup.FIRST_GENERATION_ENV: str(tmp_path / "stamp")}
    args = ["run", "--seeds", "1", "--generations", "1", "--quiet"]
    data = entry_with_hook(HOOK, tmp_path, env, args)
    # pandas is 0.4 s or more of a 2 s start: the close writes its metrics as numpy columns
    # and reads its summary as plain rows (pyarrow's pa.array alone would import it).
    assert "pandas" not in data["imported"], data["after_first_generation"]
    # pyarrow (0.1 s) only writes and reads recovery folders, which a sound close has none of.
    assert "pyarrow" not in data["imported"]
    assert NEVER.isdisjoint(data["imported"]), NEVER & set(data["imported"])
    assert "torch" in data["imported"]  # the spy saw the campaign's own imports


def test_startup_reports_first_generation_and_exit_for_each_generator(tmp_path: Path):
    rows = startup.startup(("vae",), repeats=2, home=tmp_path / "home")
    (row,) = rows
    assert row["generator"] == "vae" and len(row["runs"]) == 2
    assert all(0 < r["first_s"] <= r["exit_s"] for r in row["runs"])
    # Three campaigns in the home: the warm-up and the two timed runs.
    assert len(list((tmp_path / "home" / "campaigns").iterdir())) == 3
    (line,) = startup.describe(rows)
    assert line.startswith("vae: first generation ") and "(median of 2, load " in line
