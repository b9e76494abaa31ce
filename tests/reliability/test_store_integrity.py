"""Store integrity: keys, safe campaign ids, damaged store files, odd homes, read-only homes."""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import zipfile
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from store import SCHEMA_VERSION, Store, StoreError, create_campaign, maintenance
from store import campaigns as sc
from tests.reliability.conftest import cli, one_line_error
from tests.store.test_contract import campaign_row

TINY = [
    "--seeds",
    "2",
    "--generations",
    "3",
    "--population",
    "6",
    "--best-left",
    "2",
    "--seed",
    "1",
    "--quiet",
]
FIX = "restore a backup, or move the file away"


def test_every_indexed_campaign_table_refuses_a_second_row_with_the_same_key(tmp_path: Path):
    store = Store(tmp_path / "s.duckdb")
    create_campaign(store, campaign_row("c1"))
    with pytest.raises(duckdb.ConstraintException):
        create_campaign(store, campaign_row("c1"))
    for table, row in (
        ("seeds", "('c1', 0, 0, 3, 3, 1.0, true, 'searching')"),
        ("generations", "('c1', 0, 1, 1, 1, 3, 3, .9, 5, .1, .1, 25, .1)"),
        ("images", "('c1', 0, 'seed', 'x.png')"),
    ):
        cols = store.query(f"SELECT * FROM {table} LIMIT 0").columns
        n = row.count(",") + 1
        sql = f"INSERT INTO {table} ({', '.join(cols[:n])}) VALUES {row}"
        with store.write() as con:
            con.execute(sql)
        with pytest.raises(duckdb.ConstraintException), store.write() as con:
            con.execute(sql)
        assert store.query(f"SELECT count(*) AS n FROM {table}")["n"][0] == 1


def test_an_old_store_with_a_reused_id_gets_its_keys(tmp_path: Path):
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '3')")
    con.execute(
        "CREATE TABLE campaigns (id VARCHAR NOT NULL, status VARCHAR NOT NULL, study VARCHAR)"
    )
    con.execute("INSERT INTO campaigns VALUES ('x', 'finished', NULL), ('x', 'running', NULL)")
    con.execute(
        "CREATE TABLE images (campaign_id VARCHAR, seed_idx INTEGER, kind VARCHAR, path VARCHAR)"
    )
    con.execute("INSERT INTO images VALUES ('x', 0, 'seed', 'a'), ('x', 0, 'seed', 'b')")
    con.close()
    store = Store(path)
    assert maintenance.schema_info(store)["schema_version"] == str(SCHEMA_VERSION)
    assert store.query("SELECT id, status FROM campaigns").to_dict("records") == [
        {"id": "x", "status": "finished"}
    ]
    assert store.query("SELECT path FROM images")["path"].tolist() == ["a"]
    keys = store.query(
        "SELECT table_name FROM duckdb_constraints() WHERE constraint_type = 'PRIMARY KEY'"
    )["table_name"]
    assert {"campaigns", "seeds", "generations", "images"} <= set(keys)
    assert "individuals" not in set(keys)  # schema 11: the writer keeps its key


def test_individuals_keep_their_key_without_an_index(home: Path, env):
    """Schema 11 dropped the index of `individuals` (it doubled each flush): a campaign
    writes each key once, and doctor finds a copy and drops it. (Killed and resumed
    campaigns: tests/reliability/test_kill_resume.py, where doctor finds no duplicate.)"""
    from engine.io import doctor

    cli(["run", *TINY, "--id", "a"], env)
    store = Store(home / "latentfuzz.duckdb")
    key = "campaign_id, seed_idx, generation, individual"

    def counts() -> tuple[int, int]:
        sql = f"SELECT count(*) AS n, count(DISTINCT ({key})) AS k FROM individuals"
        return tuple(store.query(sql).iloc[0])

    n, k = counts()
    assert n == k == 2 * 3 * 6  # 2 seeds, 3 generations, population 6, at most
    first = "campaign_id = 'a' AND seed_idx = 0 AND generation = 1 AND individual < 2"
    kept = store.query(f"SELECT fitness FROM individuals WHERE {first} ORDER BY individual")
    with store.write() as con:  # two copies that differ: the first written must stay
        con.execute(
            f"INSERT INTO individuals SELECT * REPLACE (fitness + 1 AS fitness) "
            f"FROM individuals WHERE {first}"
        )
    assert counts() == (n + 2, k)
    found = [f.detail for f in doctor.check(store, home) if f.kind == "duplicate-keys"]
    assert found == ["individuals: 2 keys appear twice"]
    store.writable = False  # a read-only store: --fix leaves it, check still names it
    assert doctor.fix(store, home) == []
    assert [f.detail for f in doctor.check(store, home) if f.kind == "duplicate-keys"] == found
    store.writable = True
    assert doctor.fix(store, home) == ["dropped 2 duplicated individuals rows"]
    assert counts() == (n, k)
    after = store.query(f"SELECT fitness FROM individuals WHERE {first} ORDER BY individual")
    pd.testing.assert_frame_equal(after, kept)
    assert not [f for f in doctor.check(store, home) if f.kind == "duplicate-keys"]


def test_a_schema_10_store_loses_the_individuals_index_and_keeps_its_rows(tmp_path: Path):
    path = tmp_path / "s.duckdb"
    store = Store(path)
    create_campaign(store, campaign_row("c1"))
    rows = [("c1", 0, 1, i, 0.5 * i, 3, True, None, None) for i in range(4)]
    del store
    con = duckdb.connect(str(path))
    # The table as schema 10 made it: with its primary key.
    con.execute("DROP TABLE individuals")
    con.execute(
        "CREATE TABLE individuals (campaign_id VARCHAR NOT NULL, seed_idx INTEGER NOT NULL, "
        "generation INTEGER NOT NULL, individual INTEGER NOT NULL, fitness DOUBLE NOT NULL, "
        "pred INTEGER NOT NULL, evaluated BOOLEAN NOT NULL, pred_b INTEGER, objective2 DOUBLE, "
        "PRIMARY KEY (campaign_id, seed_idx, generation, individual))"
    )
    con.executemany("INSERT INTO individuals VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    con.execute("UPDATE meta SET value = '10' WHERE key = 'schema_version'")
    con.close()
    store = Store(path)
    assert maintenance.schema_info(store)["schema_version"] == str(SCHEMA_VERSION) == "13"
    got = store.query("SELECT * FROM individuals ORDER BY individual")
    assert [
        tuple(r) for r in got.astype(object).where(got.notna(), None).itertuples(index=False)
    ] == rows
    keys = store.query(
        "SELECT table_name FROM duckdb_constraints() WHERE constraint_type = 'PRIMARY KEY'"
    )["table_name"]
    assert "individuals" not in set(keys) and "generations" in set(keys)
    with pytest.raises(duckdb.ConstraintException), store.write() as con:  # NOT NULL kept
        con.execute("INSERT INTO individuals VALUES ('c1', 0, 2, 0, NULL, 3, true, NULL, NULL)")


@pytest.mark.parametrize("bad", ["../../x", "a/b", ".hidden", "", "x" * 101, "a b", "é"])
def test_an_unsafe_campaign_id_is_refused_before_anything_is_written(home: Path, env, bad):
    p = cli(["run", *TINY, "--id", bad], env, ok=False)
    one_line_error(p, f"campaign id {bad!r} is not allowed", "letters, digits")
    assert list(home.iterdir()) == []  # no store, no folder
    assert not (home.parent.parent / "x").exists()


def test_a_reused_campaign_id_is_refused_and_the_first_campaign_is_untouched(home: Path, env):
    cli(["run", *TINY, "--id", "mine"], env)
    store = Store(home / "latentfuzz.duckdb")
    before = {t: len(store.query(f"SELECT * FROM {t}")) for t in ("seeds", "generations")}
    p = cli(["run", *TINY, "--id", "mine"], env, ok=False)
    one_line_error(p, "campaign id 'mine' is taken", "latentfuzz delete mine")
    assert {t: len(store.query(f"SELECT * FROM {t}")) for t in before} == before
    assert sc.list_campaigns(store)["id"].tolist() == ["mine"]


def _damage(path: Path, how: str) -> None:
    if how == "empty":
        path.write_bytes(b"")
    elif how == "garbage":
        path.write_bytes(os.urandom(300_000))
    elif how == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) - 100_000])
    elif how == "whole blocks cut":  # still headers plus whole blocks, fewer than counted
        data = path.read_bytes()
        path.write_bytes(data[: len(data) - 256 * 1024])
    elif how == "newer":
        con = duckdb.connect(str(path))
        con.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
        con.close()


@pytest.mark.parametrize(
    "how,says",
    [
        ("empty", "is empty (0 bytes)"),
        ("garbage", "is not a DuckDB database"),
        ("truncated", "is truncated"),
        ("whole blocks cut", "is damaged (IO Error: Could not read"),
        ("newer", "schema version 999"),
    ],
)
def test_a_damaged_store_is_named_with_the_fix(home: Path, env, how, says):
    path = home / "latentfuzz.duckdb"
    Store(path)  # a healthy, empty store
    _damage(path, how)
    size = path.stat().st_size
    with pytest.raises(StoreError, match=re.escape(says)):
        Store(path)
    for args in (["campaigns"], ["show", "x"], ["run", *TINY]):
        p = cli(args, env, ok=False)
        line = one_line_error(p, says)
        assert FIX in line or "move the file away" in line
    assert path.stat().st_size == size  # never "repaired" by overwriting
    assert not (home / "campaigns").exists()


def test_a_home_that_is_a_file_is_named(tmp_path: Path, env):
    f = tmp_path / "home-file"
    f.write_text("not a folder")
    p = cli(["campaigns", "--home", str(f)], env, ok=False)
    one_line_error(p, "is a file, expected a folder")
    p = cli(["campaigns", "--home", str(f / "sub")], env, ok=False)
    one_line_error(p, "home-file")


def _read_only_env(home: Path, env) -> tuple[list[str], dict[str, str]]:
    """Make `home` read-only for the CLI: chmod, and for root (which ignores modes) run the
    CLI without root's override of file modes. Not as nobody: a checkout in a private
    folder (`mktemp -d`, mode 700, as CI clones) is unreadable to nobody, while root
    without the override still reads what it owns."""
    for p in [home, *home.rglob("*")]:
        mode = p.stat().st_mode
        p.chmod(
            mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
            | stat.S_IROTH
            | (stat.S_IXOTH if p.is_dir() else 0)
        )
    if os.geteuid() != 0:
        return [], env
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"], {
        **env,
        "HOME": "/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def test_a_read_only_home_can_be_listed_shown_and_exported(env):
    # Not under pytest's tmp_path: its folders are private to the test's user.
    base = Path(tempfile.mkdtemp(prefix="lf-ro-"))
    try:
        base.chmod(0o777)
        home = base / "home"
        env = {**env, "LATENTFUZZ_HOME": str(home)}
        cli(["run", *TINY, "--id", "ro"], env)
        # A copied home without its lock file, the harder case: readers lock the store file.
        (home / "latentfuzz.duckdb.lock").unlink()
        prefix, ro_env = _read_only_env(home, env)
        out = base / "out"
        out.mkdir(mode=0o777)
        out.chmod(0o777)
        listing = cli(["campaigns"], {**ro_env, "COLUMNS": "200"}, prefix=prefix)
        assert "ro" in listing.stdout and "finished" in listing.stdout
        assert "viable seeds" in cli(["show", "ro"], ro_env, prefix=prefix).stdout
        cli(["export", "ro", "--zip", str(out / "ro.zip")], ro_env, prefix=prefix)
        with zipfile.ZipFile(out / "ro.zip") as zf:
            assert "seeds.csv" in zf.namelist()
        p = cli(["run", *TINY], ro_env, ok=False, prefix=prefix)
        one_line_error(p, "read-only")
    finally:
        for p in [base, *base.rglob("*")]:
            p.chmod(0o777)
        shutil.rmtree(base)


def _store_with_data_blocks(path: Path) -> None:
    """A store whose campaigns table fills several blocks (3,000 rows of 2 kB configs)."""
    store = Store(path)
    with store.write(checkpoint=True) as con:
        con.execute(
            "INSERT INTO campaigns (id, name, status, created_at, dataset, generator, "
            "classifier, strategy, n_seeds, random_seed, config, environment, dir) "
            "SELECT 'c' || i, 'n' || i, 'finished', now(), 'mnist', 'g', 'c', 'ga', 10, 1, "
            "to_json(repeat('x', 2000)), '{}', 'campaigns/c' || i FROM range(3000) t(i)"
        )


@pytest.mark.parametrize(
    "cut,wal,says",
    [
        # Blocks of table data gone: the catalog reads, the campaigns' rows do not.
        (2 * 256 * 1024, None, "is damaged (IO Error: Could not read enough bytes"),
        # A cut file beside a WAL is not a checkpoint's torn tail: it is shorter than its
        # header counts, whether the WAL is empty or not.
        (300_000, b"", "is truncated"),
        (300_000, b"\x01" * 4096, "is truncated"),
    ],
)
def test_damage_in_data_blocks_or_beside_a_wal_is_named_in_one_line(
    home: Path, env, cut, wal, says
):
    path = home / "latentfuzz.duckdb"
    _store_with_data_blocks(path)
    path.write_bytes(path.read_bytes()[:-cut])
    if wal is not None:
        Path(f"{path}.wal").write_bytes(wal)
    size = path.stat().st_size
    for args in (["campaigns"], ["rename", "c5", "x"]):
        p = cli(args, env, ok=False)
        one_line_error(p, says)
    assert path.stat().st_size == size  # nothing "repaired" by a checkpoint
