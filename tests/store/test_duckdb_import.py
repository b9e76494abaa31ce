"""DuckDB is imported with Ctrl-C and SIGTERM held (store/_duckdb.py): a SIGTERM landing
inside its module's initialisation aborted `latentfuzz import` with a "Critical nanobind
error" and a traceback (exit 134)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from store import interrupts

# A signal sent to itself as the import of duckdb begins: the moment the abort needed.
CHILD = """
import importlib.abc, os, signal, sys
signal.signal(signal.SIGTERM, signal.default_int_handler)

class SignalOnDuckdb(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "duckdb":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGTERM)
        return None

sys.meta_path.insert(0, SignalOnDuckdb())
try:
    import store.connection
except KeyboardInterrupt:
    print("interrupted after the import" if "duckdb" in sys.modules else "inside the import")
import duckdb
print(duckdb.connect().execute("select 42").fetchall()[0][0])
"""


def test_a_signal_as_duckdb_loads_is_handled_once_it_has_loaded():
    out = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.stdout.split("\n")[:2] == ["interrupted after the import", "42"], out


def test_masked_delivers_a_held_signal_as_the_block_ends():
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), interrupts.masked():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # held: nothing raised in here
            reached = True
        assert reached
    finally:
        signal.signal(signal.SIGINT, old)
