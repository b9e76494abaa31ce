"""Store.session: one read connection serves a block's queries; writes still work."""

from __future__ import annotations

from pathlib import Path

from store import Store, host


def test_a_session_opens_the_file_once_and_a_write_inside_it_works(tmp_path: Path, monkeypatch):
    store = Store(tmp_path / "s.duckdb")
    opened = []
    real = host.attach

    def attach(path, read_only=False, outermost=True):
        opened.append(read_only)
        return real(path, read_only, outermost)

    monkeypatch.setattr(host, "attach", attach)
    with store.session():
        for _ in range(5):
            assert store.query("SELECT 1 AS x")["x"][0] == 1
        assert opened == [True]  # five queries, one connection
        with store.write() as con:  # closes the session's connection first
            con.execute("INSERT INTO meta VALUES ('probe', 'yes')")
        assert store.query("SELECT value FROM meta WHERE key = 'probe'")["value"][0] == "yes"
        assert opened == [True, False, True]  # reopened after the write
    assert store._tls.stack is None
    store.query("SELECT 1")
    assert opened == [True, False, True, True]  # outside: one connection per query again


def test_another_process_can_read_during_a_session(tmp_path: Path):
    import subprocess
    import sys

    path = tmp_path / "s.duckdb"
    store = Store(path)
    code = (
        "from store import Store; import sys; "
        f"print(Store(r'{path}', timeout=5).query('SELECT 1 AS x')['x'][0])"
    )
    with store.session():
        store.query("SELECT 1")
        p = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "1"
