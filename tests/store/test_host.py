"""Writes attach the store file to one in-memory instance per process (store/host.py):
the file is held only for the write, other processes see what they saw with connect."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import duckdb

from store import Store, host

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
        values = store.query("SELECT DISTINCT value FROM meta WHERE key LIKE '_%' AND value "
                             "IN ('a', 'b')")["value"].tolist()  # fmt: skip
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
    # A DETACH that fails (here: of a name never attached; in life, a checkpoint on a full
    # disk) must not leave the store attached and locked for the rest of the process.
    never = str(tmp_path / "never.duckdb")
    host._USERS[host.alias(never)] = 1
    try:
        host.detach(con, never)
    except duckdb.Error:
        pass
    else:
        raise AssertionError("detaching a name never attached should fail")
    assert other_process_opens(store.path) == "opened"
    with store.write() as w:
        w.execute("INSERT INTO meta VALUES ('after', 'x')")
    assert len(store.query("SELECT * FROM meta WHERE key IN ('kept', 'after')")) == 2


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
