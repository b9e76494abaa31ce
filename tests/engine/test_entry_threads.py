"""The entry point sets OpenMP's wait policy before torch is imported (unless the user set
one), and a real `run` takes the thread count engine/core/threads.py chooses; both recorded
in the campaign row's environment. In subprocesses: the policy is read by libgomp once, when
torch loads, so only a fresh process shows it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.core import threads
from store import Store
from store import campaigns as sc
from tests.helpers import entry_with_hook

#: Runs `python -m engine.entry ARGS` after a meta-path hook that writes the environment's
#: OMP_WAIT_POLICY at the moment torch is first imported, to the file named by the first
#: argument.
HOOK = """
import json, os, runpy, sys

out = sys.argv.pop(1)

class Spy:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" and not os.path.exists(out):
            with open(out, "w") as f:
                json.dump({"policy": os.environ.get("OMP_WAIT_POLICY")}, f)
        return None

sys.meta_path.insert(0, Spy())
sys.argv[0] = "engine.entry"
runpy.run_module("engine.entry", run_name="__main__", alter_sys=True)
"""

TINY = ["run", "--seeds", "1", "--generations", "1", "--quiet", "--id", "t1"]


def environment(home: Path, cid: str) -> dict:
    return sc.campaign(Store(home / "latentfuzz.duckdb"), cid)["environment"]


def test_the_wait_policy_is_passive_before_torch_loads_and_run_takes_the_cores_share(
    home: Path, tmp_path: Path, env: dict[str, str]
):
    env = {k: v for k, v in env.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    env.pop("LATENTFUZZ_THREADS", None)
    seen = entry_with_hook(HOOK, tmp_path, env, TINY)
    assert seen["policy"] == "PASSIVE"
    rec = environment(home, "t1")
    want = threads.choose(1, environ=env).threads  # this process's affinity: the same cores
    assert rec["torch_threads"] == want and rec["interop_threads"] == threads.INTEROP_THREADS
    assert rec["omp_wait_policy"] == "PASSIVE" and rec["cores"] == threads.cores()[0]


@pytest.mark.parametrize("policy", ["ACTIVE", ""])
def test_a_users_own_wait_policy_and_threads_are_kept(
    home: Path, tmp_path: Path, env: dict[str, str], policy: str
):
    env = {**env, "OMP_WAIT_POLICY": policy, "LATENTFUZZ_THREADS": "3"}
    seen = entry_with_hook(HOOK, tmp_path, env, [*TINY, "--threads", "2"])
    assert seen["policy"] == policy
    rec = environment(home, "t1")
    assert rec["torch_threads"] == 2 and rec["omp_wait_policy"] == policy  # --threads first


def test_bad_threads_on_run_and_resume_are_refused_in_one_line(home: Path, env: dict[str, str]):
    for args in (["run", "--threads", "0"], ["resume", "nope", "--threads", "0"]):
        p = subprocess.run(
            [sys.executable, "-m", "engine.entry", *args], env=env, capture_output=True, text=True
        )
        assert p.returncode == 2
        assert p.stderr.strip().splitlines() == [
            "error: --threads is '0', expected a whole number of threads from 1 to 4096; give "
            "e.g. --threads 1, or leave it out for the cores' share"
        ]
    assert not (home / "campaigns").exists() or not any((home / "campaigns").iterdir())
