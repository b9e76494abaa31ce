"""Writes attach the store file to one in-memory instance per process (store/host.py):
the file is held only for the write, other processes see what they saw with connect."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import pytest

from store import Store, StoreError, host

OPEN_RW = """
import duckdb, sys
try:
    duckdb.connect(sys.argv[1]).close()
    print("opened")
except duckdb.IOException:
    print("locked")
"""


def other_process_opens(path: Path) -> str:
    run = subprocess.run([sys.executable, "-c", OPEN_RW, str(path)], capture_output=True, text=True)
    return run.stdout.strip()


def test_the_file_is_held_during_a_write_and_released_after(tmp_path: Path):
    store = Store(tmp_path / "s.duckdb")
    with store.write() as con:
        con.execute("INSERT INTO meta VALUES ('probe', 'yes')")
        assert other_process_opens(store.path) == "locked"
    assert other_process_opens(store.path) == "opened"
    assert not Path(store.path + ".wal").exists()  # checkpointed on release, as close did
    assert store.query("SELECT value FROM meta WHERE key = 'probe'")["value"][0] == "yes"


def test_reads_and_writes_build_no_database_instance(tmp_path: Path, monkeypatch):
    store = Store(tmp_path / "s.duckdb")
    store.query("SELECT 1")  # the host instance may be built on first use
    with store.write():
        pass
    built = []
    real = duckdb.connect
    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: built.append(a) or real(*a, **k))
    for i in range(5):
        with store.write() as con:
            con.execute("INSERT INTO meta VALUES (?, 'x')", [f"k{i}"])
        assert len(store.query("SELECT * FROM meta WHERE key LIKE 'k%'")) == i + 1
    assert built == []


def test_two_stores_written_from_two_threads_keep_their_rows(tmp_path: Path):
    stores = [Store(tmp_path / f"{i}.duckdb") for i in range(2)]
    errors: list[BaseException] = []

    def write(store: Store, tag: str) -> None:
        try:
            for i in range(20):
                with store.write() as con:
                    con.execute("INSERT INTO meta VALUES (?, ?)", [f"{tag}{i}", tag])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    pairs = zip(stores, "ab", strict=True)
    threads = [threading.Thread(target=write, args=pair) for pair in pairs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for store, tag in zip(stores, "ab", strict=True):
        values = store.query(
            "SELECT DISTINCT value FROM meta WHERE key LIKE '_%' AND value IN ('a', 'b')"
        )["value"].tolist()
        assert values == [tag]


def test_a_failed_write_rolls_back_and_releases_the_file(tmp_path: Path):
    store = Store(tmp_path / "s.duckdb")
    try:
        with store.write() as con:
            con.execute("INSERT INTO meta VALUES ('half', 'x')")
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert other_process_opens(store.path) == "opened"
    assert store.query("SELECT * FROM meta WHERE key = 'half'").empty
    with store.write() as con:  # the alias is free again
        con.execute("INSERT INTO meta VALUES ('after', 'x')")
    assert len(store.query("SELECT * FROM meta WHERE key = 'after'")) == 1


def test_a_failed_release_drops_the_instance_and_the_next_write_works(tmp_path: Path):
    store = Store(tmp_path / "s.duckdb")
    con = host.attach(store.path)
    con.execute("INSERT INTO meta VALUES ('kept', 'x')")

    class FailingDetach:  # a DETACH that fails with the file still attached
        def execute(self, sql, *args):
            if sql.startswith("DETACH"):
                raise duckdb.IOException("IO Error: could not release")
            return con.execute(sql, *args)

        def close(self):
            con.close()

    failing = FailingDetach()
    host._INSTANCE[id(failing)] = host._INSTANCE.pop(id(con))
    with pytest.raises(duckdb.IOException, match="could not release"):
        host.detach(failing, store.path)
    # Not attached and locked for the rest of the process: the instance went.
    assert other_process_opens(store.path) == "opened"
    with store.write() as w:
        w.execute("INSERT INTO meta VALUES ('after', 'x')")
    assert len(store.query("SELECT * FROM meta WHERE key IN ('kept', 'after')")) == 2


FULL_DISK_AT_CHECKPOINT = """
import os, resource, signal, sys
sys.path.insert(0, sys.argv[2])
from store import Store
store = Store(sys.argv[1])
# The WAL (a new file) fits; the checkpoint, which grows the store file, does not.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = os.path.getsize(sys.argv[1]) + 300_000
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
with store.write() as con:
    con.executemany("INSERT INTO meta VALUES (?, ?)", [(f"k{i}", "x" * 20) for i in range(5000)])
print("written")
"""


def test_a_committed_write_whose_checkpoint_fails_is_not_reported_as_failed(tmp_path: Path):
    # duckdb.connect's close swallowed a failed checkpoint; DETACH raises it, after the
    # commit. Reported as failed, a campaign's flush would put its rows back and write
    # them twice.
    path = tmp_path / "s.duckdb"
    Store(path)
    repo = str(Path(__file__).resolve().parents[2])
    run = subprocess.run(
        [sys.executable, "-c", FULL_DISK_AT_CHECKPOINT, str(path), repo],
        capture_output=True,
        text=True,
    )
    assert run.stdout.strip() == "written", run.stderr[-500:]
    # The failed checkpoint left part of a block at the file's end, which no header
    # counts: the store still opens (Store's own check once refused it as truncated),
    # DuckDB replays the WAL, every row is there, and the store takes writes again.
    assert (path.stat().st_size - 3 * 4096) % (256 * 1024), "no torn tail: test is moot"
    store = Store(path)
    assert store.query("SELECT count(*) AS n FROM meta WHERE key LIKE 'k%'")["n"][0] == 5000
    with store.write() as con:
        con.execute("INSERT INTO meta VALUES ('after', 'x')")
    assert len(Store(path).query("SELECT * FROM meta WHERE key = 'after'")) == 1


def test_a_write_inside_a_read_of_the_same_store_is_refused_in_one_line(tmp_path: Path):
    store = Store(tmp_path / "s.duckdb")
    refused = pytest.raises(StoreError, match="inside a read of the same store")
    with store.read(), refused, store.write():
        pass
    with store.write() as con:  # and nothing is left held
        con.execute("INSERT INTO meta VALUES ('after', 'x')")
    assert other_process_opens(store.path) == "opened"


def test_an_attachment_an_interrupt_left_behind_is_dropped_by_the_next_use(tmp_path: Path):
    store = Store(tmp_path / "s.duckdb")
    stale = host._host().cursor()  # as if Ctrl-C came between ATTACH and the count
    stale.execute(f"ATTACH '{store.path}' AS {host.alias(store.path)}")
    stale.close()
    with store.write() as con:
        con.execute("INSERT INTO meta VALUES ('after', 'x')")
    assert other_process_opens(store.path) == "opened"


def test_a_read_nested_in_another_of_the_same_file_shares_it(tmp_path: Path):
    store = Store(tmp_path / "s.duckdb")
    again = Store(str(tmp_path / ".." / tmp_path.name / "s.duckdb"))  # another spelling
    with store.session():
        assert store.query("SELECT count(*) AS n FROM meta")["n"][0] > 0
        for other in (store, again):  # the page's session holds the file in this thread
            with other.read() as con:
                assert con.execute("SELECT count(*) FROM meta").fetchone()[0] > 0
        assert store.query("SELECT 1 AS x")["x"][0] == 1  # the session's use goes on
    assert other_process_opens(store.path) == "opened"  # the last use let it go
