"""Helpers for tests that drive the CLI, or the store, from a real second process."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

from store import Store, judging
from store import campaigns as sc

#: The installed `latentfuzz` script's entry point, which takes Ctrl-C and SIGTERM from its
#: first instruction (engine/entry.py); `-m engine.cli.main` takes them only once imported.
CLI = [sys.executable, "-m", "engine.entry"]

#: Processes the running test started (spawn, start_cli): tests/conftest.py ends each one's
#: process group after the test, passed or failed.
STARTED: list[subprocess.Popen] = []


def entry_with_hook(hook: str, tmp_path: Path, env: dict[str, str], args: list[str]) -> dict:
    """Run `python -m engine.entry ARGS` under `hook`, a script that takes the path of a JSON
    file as its first argument, writes what it saw there, then runs the entry point; the
    command must succeed. Returns the JSON."""
    script, seen = tmp_path / "hook.py", tmp_path / "seen.json"
    script.write_text(hook)
    p = subprocess.run(
        [sys.executable, str(script), str(seen), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(seen.read_text())


def spawn(command: list[str], **kw) -> subprocess.Popen:
    """subprocess.Popen in a process group of its own (what it starts in turn, a grid's
    workers say, is in it too), ended after the test whatever happens (end_group). Pipes
    for stdout and stderr, as text, unless given."""
    kw = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, **kw}
    p = subprocess.Popen(command, start_new_session=True, **kw)
    STARTED.append(p)
    return p


def start_cli(args: list[str], env: dict[str, str], **kw) -> subprocess.Popen:
    return spawn([*CLI, *args], env=env, **kw)


def end_group(p: subprocess.Popen, timeout: float = 30) -> None:
    """Kill `p`'s process group (p and what it started, even once p has ended), reap p and
    close its pipes."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        p.wait(timeout)
    for f in (p.stdin, p.stdout, p.stderr):
        if f is not None:
            with contextlib.suppress(OSError):
                f.close()


def end_started() -> None:
    """End every process the test started (tests/conftest.py calls it after each test)."""
    while STARTED:
        end_group(STARTED.pop())


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields from the third on (state, ppid, ...), None if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def descendants(pid: int) -> dict[int, str]:
    """{pid: start time} of every live, non-zombie process below `pid` (Linux /proc): the
    start time tells a process from a later one given the same pid."""
    parent, start = {}, {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and (f := _stat(int(d.name))) and f[0] != "Z":
            parent[int(d.name)], start[int(d.name)] = int(f[1]), f[19]
    found: dict[int, str] = {}
    frontier = {pid}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier}
        found.update({p: start[p] for p in frontier})
    return found


def alive(pid: int, start: str) -> bool:
    """Whether process `pid`, started at `start` (descendants), still runs (a zombie has
    ended: only its reaping is late)."""
    f = _stat(pid)
    return f is not None and f[0] != "Z" and f[19] == start


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return "?"


@contextlib.contextmanager
def running(command: list[str], **kw) -> Iterator[subprocess.Popen]:
    """spawn() for a with-block: the group ends when the block does."""
    p = spawn(command, **kw)
    try:
        yield p
    finally:
        end_group(p)


def wait_for_files(ready: Callable[[], bool], proc: subprocess.Popen, timeout: float = 60) -> None:
    """Wait for a file-system sign that the campaign process has started (it makes its
    folder just before its row). The file system costs nothing to poll, while each look at
    the store opens a connection (tens of ms of CPU), and the CLI spends seconds importing
    first: polling the store all that time takes a core from the process the test awaits."""
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            raise AssertionError(f"CLI exited early: {proc.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError("the campaign process never started its campaign")
        time.sleep(0.01)


def wait_for_campaign(store: Store, proc: subprocess.Popen, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    campaigns = Path(store.path).parent / "campaigns"
    wait_for_files(lambda: campaigns.is_dir() and any(campaigns.iterdir()), proc, timeout)
    while time.monotonic() < deadline:
        df = sc.list_campaigns(store)
        if not df.empty:
            return str(df.iloc[0]["id"])
        if proc.poll() is not None:
            raise AssertionError(f"CLI exited early: {proc.communicate()}")
        time.sleep(0.1)
    raise AssertionError("no campaign appeared")


def wait_for_generation(store: Store, cid: str, generation: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sc.progress(store, cid).get("generation", 0) >= generation:
            return
        time.sleep(0.05)
    raise AssertionError(f"campaign {cid} never reached generation {generation}")


def label_all(db: str, name: str, answer: int) -> int:
    """Join study "s" of the store `db` as `name` and answer every item it serves; returns
    how many answers landed. Run in spawned workers, which import only this module (the
    store, no torch), not the test module that starts them."""
    store, n = Store(db), 0
    judging.join(store, "s", name)
    while (item := judging.next_item(store, "s", name)) is not None:
        n += judging.answer(store, "s", item, name, answer, datetime.now())
    return n


def db(home: Path) -> Store:
    return Store(home / "latentfuzz.duckdb")


def page_opener(home: Path, monkeypatch):
    """open(page, **query) -> AppTest of `pages/<page>` in the app, served on `home`."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    app = str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py")
    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    st.cache_resource.clear()

    def open_page(page: str, **params: str) -> AppTest:
        at = AppTest.from_file(app, default_timeout=60).run()
        at.switch_page(f"../pages/{page}")
        for k, v in params.items():
            at.query_params[k] = v
        return at.run()

    return open_page


def record_deferred(monkeypatch) -> dict[str, object]:
    """file name -> the callable of each download made on its click (Streamlit's deferred
    download), to run as the browser's click runs it."""
    # Deferred (streamlit's runtime, for the page tests only).
    from streamlit.runtime.media_file_manager import MediaFileManager

    made: dict[str, object] = {}
    add = MediaFileManager.add_deferred

    def recording(self, data_callable, mimetype, coordinates, file_name=None, **kw):
        made[file_name] = data_callable
        return add(self, data_callable, mimetype, coordinates, file_name, **kw)

    monkeypatch.setattr(MediaFileManager, "add_deferred", recording)
    return made


def old_store(path: Path, version: int, *statements: str) -> Path:
    """A store file as an older latentfuzz left it: schema `version` in its meta table,
    plus whatever tables and rows `statements` create."""
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(version)])
    for sql in statements:
        con.execute(sql)
    con.close()
    return path


# Tiny datasets in each reader's exact on-disk format (engine/datasets/readers.py).


def write_idx(path: Path, arr, gz: bool = False) -> None:
    """An IDX file (optionally gzipped): magic 0000 08 NDIM, big-endian dims, uint8 data."""
    import gzip
    import struct

    import numpy as np

    header = struct.pack(">HBB", 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    data = header + np.asarray(arr).astype(np.uint8).tobytes()
    if gz:
        path = path.with_name(path.name + ".gz")
        data = gzip.compress(data)
    path.write_bytes(data)


def class_images(labels, shape: tuple[int, int, int], seed: int):
    """uint8 images (N, C, H, W) a small net tells apart in a few steps: each class has its
    own mean colour and a bright band at its own height, plus noise."""
    import numpy as np

    rng = np.random.default_rng(seed)
    c, h, w = shape
    x = rng.integers(0, 60, (len(labels), c, h, w)).astype(np.int64)
    for i, y in enumerate(labels):
        x[i, int(y) % c] += 120
        row = (int(y) * 3) % (h - 3)
        x[i, :, row : row + 3, :] += 70
    return x.clip(0, 255).astype(np.uint8)


def write_cifar10(folder: Path, per_batch: int = 8, test: int = 16, classes: int = 2) -> Path:
    """cifar-10-batches-py/ with five training batches and a test batch; labels cycle over
    the first `classes` classes. Returns the parent folder (what --data-dir takes)."""
    import pickle

    root = folder / "cifar-10-batches-py"
    root.mkdir(parents=True)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for k, name in enumerate(names):
        n = test if name == "test_batch" else per_batch
        labels = [(i + k) % classes for i in range(n)]
        x = class_images(labels, (3, 32, 32), seed=k)
        batch = {b"data": x.reshape(n, 3072), b"labels": labels, b"batch_label": name.encode()}
        with open(root / name, "wb") as f:
            pickle.dump(batch, f)
    return folder


def write_svhn(folder: Path, train: int = 40, test: int = 16, classes: int = 2) -> Path:
    """train_32x32.mat and test_32x32.mat (X: 32x32x3xN, y: N x 1 with 10 for the digit 0)."""
    import numpy as np
    from scipy.io import savemat

    folder.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", train), ("test", test)):
        labels = np.arange(n) % classes
        x = class_images(labels, (3, 32, 32), seed=n)
        y = np.where(labels == 0, 10, labels).reshape(-1, 1).astype(np.uint8)
        savemat(folder / f"{split}_32x32.mat", {"X": x.transpose(2, 3, 1, 0), "y": y})
    return folder


def write_mnist_idx(folder: Path, train: int = 40, test: int = 16, classes: int = 2) -> Path:
    """The four MNIST IDX files, 28x28 grey."""
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    for prefix, n in (("train", train), ("t10k", test)):
        labels = np.arange(n) % classes
        images = class_images(labels, (1, 28, 28), n)[:, 0]
        write_idx(folder / f"{prefix}-images-idx3-ubyte", images)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte", labels)
    return folder


def markdown_tables(at) -> list:
    """Every Markdown table an AppTest page shows, as DataFrames of its cells' text (the
    escapes Markdown drops, dropped), headed by their header row."""
    # Deferred (pandas, for the page tests only).
    import re

    import pandas as pd

    def cells(line: str) -> list[str]:
        parts = re.split(r"(?<!\\)\|", line.strip())[1:-1]
        return [re.sub(r"\\(.)", r"\1", p.strip()) for p in parts]

    out = []
    for m in at.markdown:
        lines = [x for x in m.value.splitlines() if x.startswith("|")]
        if len(lines) >= 2 and set(lines[1].replace("|", "").split()) <= {"---", "---:"}:
            out.append(pd.DataFrame([cells(x) for x in lines[2:]], columns=cells(lines[0])))
    return out
