"""A bundle's rows are checked as data: every row its own campaign's, exactly the
schema's columns and types, values in range, and column names never reach SQL as text.
Each refusal is one line and leaves nothing in the store or the home."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from engine.core.errors import LatentfuzzError
from engine.core.files import sha256
from engine.io.bundle import import_bundle
from store.bundles import TABLES
from tests.engine.io.test_bundle import db

SEMICOLON = 'x"; DROP TABLE seeds; --'


def craft(
    bundle: Path,
    out: Path,
    tables: dict[str, str] | None = None,
    raw: dict[str, bytes] | None = None,
    manifest: Callable[[dict], None] = lambda m: None,
    keep_files: bool = True,
) -> Path:
    """What an attacker makes of an honest bundle: tables rewritten by DuckDB SQL over
    '{f}' (the table's Parquet file), members replaced by `raw` bytes, the manifest
    edited, its hashes and sizes made to match (so only the rows' checks stand)."""
    tmp = out.with_suffix(".d")
    shutil.unpack_archive(bundle, tmp, "zip")
    con = duckdb.connect()
    for table, sql in (tables or {}).items():
        p = tmp / "tables" / f"{table}.parquet"
        con.execute(f"COPY ({sql.format(f=p)}) TO '{p}.new' (FORMAT parquet)")
        Path(f"{p}.new").replace(p)
    for name, data in (raw or {}).items():
        (tmp / name).write_bytes(data)
    if not keep_files:
        shutil.rmtree(tmp / "files")
    m = json.loads((tmp / "manifest.json").read_text())
    m["files"] = {n: "" for n in m["files"] if (tmp / n).is_file()}
    manifest(m)
    m["files"] = {n: sha256(tmp / n) for n in m["files"]}
    m["sizes"] = {n: (tmp / n).stat().st_size for n in m["files"]}
    (tmp / "manifest.json").write_text(json.dumps(m))
    shutil.make_archive(str(out.with_suffix("")), "zip", tmp)
    out.with_suffix(".zip").replace(out)
    return out


def counts(home: Path) -> dict[str, int]:
    return {t: int(db(home).query(f"SELECT count(*) AS n FROM {t}")["n"][0]) for t in TABLES}


def folders(home: Path) -> list[str]:
    return sorted(p.name for p in (home / "campaigns").iterdir())


@pytest.fixture
def victim(honest, tmp_path: Path) -> Path:
    """A home that already holds a campaign, `victim` (the honest bundle, imported)."""
    home = tmp_path / "victim-home"
    import_bundle(db(home), home, honest, "victim")
    return home


def refused(home: Path, bad: Path, match: str, new_id: str | None = None) -> None:
    """Refused in one line, and the store and the home are as they were."""
    before, names = counts(home), folders(home) if (home / "campaigns").is_dir() else []
    with pytest.raises(LatentfuzzError, match=match) as e:
        import_bundle(db(home), home, bad, new_id)
    assert "\n" not in str(e.value)
    assert counts(home) == before and folders(home) == names  # no staging folder either


@pytest.mark.parametrize("table", ["individuals", "generations", "seeds", "annotations"])
def test_rows_of_another_campaign_are_refused(source, honest, victim, tmp_path, table):
    _, cid = source
    idc = "id" if table == "annotations" else "campaign_id"
    bad = craft(
        honest, tmp_path / "b.lfz", {table: f"SELECT * REPLACE ('victim' AS {idc}) FROM '{{f}}'"}
    )
    refused(victim, bad, rf"tables/{table}\.parquet holds \d+ rows of campaign 'victim'")
    refused(victim, bad, "of campaign 'victim'", "copy")


@pytest.mark.parametrize(
    "sql, match",
    [
        ("SELECT *, 1 AS extra FROM '{f}'", "has a column 'extra' that store schema"),
        ("SELECT * EXCLUDE (final_top1) FROM '{f}'", "lacks the column 'final_top1'"),
        (
            f"SELECT *, 1 AS \"{SEMICOLON.replace(chr(34), chr(34) * 2)}\" FROM '{{f}}'",
            "has a column",
        ),
        ("SELECT * REPLACE ('abc' AS seed_idx) FROM '{f}'", "holds rows this schema refuses"),
        ("SELECT * REPLACE (NULL AS seed_label) FROM '{f}'", "holds rows this schema refuses"),
        ("SELECT * FROM '{f}' UNION ALL SELECT * FROM '{f}'", "holds rows this schema refuses"),
    ],
    ids=["extra", "missing", "quote-semicolon", "type", "null", "duplicate-key"],
)
def test_columns_and_types_are_the_schemas(honest, tmp_path, sql, match):
    bad = craft(honest, tmp_path / "b.lfz", {"seeds": sql})
    home = tmp_path / "home"
    for new_id in (None, "copy"):  # --as rewrites the rows' ids: the quoted SQL
        refused(home, bad, rf"tables/seeds\.parquet {match}", new_id)
    assert "seeds" in counts(home)  # (the table is still there)


def test_individuals_given_twice_are_refused(honest, tmp_path):
    """No index keeps a second copy of an individual out (store/schema.py UNINDEXED)."""
    twice = "SELECT * FROM '{f}' UNION ALL SELECT * FROM '{f}' WHERE seed_idx = 0"
    bad = craft(honest, tmp_path / "b.lfz", {"individuals": twice})
    refused(tmp_path / "home", bad, r"tables/individuals\.parquet holds \d+ keys .*more than once")


def test_a_table_that_is_not_parquet_is_refused(honest, tmp_path):
    bad = craft(honest, tmp_path / "b.lfz", raw={"tables/generations.parquet": b"id,x\n1,2\n"})
    refused(tmp_path / "home", bad, r"tables/generations\.parquet is not a Parquet table")


RANGE = {
    "seed_idx": ("seeds", "-1 AS seed_idx", "seed_idx = -1 in 1 rows, expected a seed number"),
    "generation": ("generations", "-5 AS generation", "generation = -5 in 1 rows"),
    "count": ("individuals", "-1 AS individual", "individual = -1 in 1 rows"),
    "infinite": ("generations", "'inf'::DOUBLE AS elapsed_s", "elapsed_s = inf .*finite seconds"),
    "nan": ("campaigns", "'nan'::DOUBLE AS wall_seconds", "wall_seconds = nan"),
    "probability": ("generations", "2.0 AS top1_prob", "top1_prob = 2.0 .*a probability"),
    "status": ("seeds", "'owned' AS status", "status = 'owned' .*a seed status"),
}


@pytest.mark.parametrize("case", sorted(RANGE))
def test_values_out_of_range_are_refused(honest, tmp_path, case):
    table, replace, match = RANGE[case]
    first = "seed_idx = 0 AND generation = 1 AND individual = 0"
    where = {"seeds": "seed_idx = 0", "generations": "seed_idx = 0 AND generation = 1"}
    cond = {"individuals": first, "campaigns": "true"}.get(table) or where[table]
    sql = f"SELECT * REPLACE ({replace}) FROM '{{f}}' WHERE {cond} UNION ALL "
    sql += f"SELECT * FROM '{{f}}' WHERE NOT ({cond})"
    bad = craft(honest, tmp_path / "b.lfz", {table: sql})
    refused(tmp_path / "home", bad, rf"tables/{table}\.parquet has {match}")


def test_a_manifest_id_that_climbs_out_is_refused(source, honest, victim, tmp_path):
    """`../../../victim` named the folder the import moved into place: the victim's."""
    _, cid = source
    climb = "../../../victim"
    idc = {t: "id" if t in ("campaigns", "annotations") else "campaign_id" for t in TABLES}
    sql = {t: f"SELECT * REPLACE ('{climb}' AS {idc[t]}) FROM '{{f}}'" for t in TABLES}
    bad = craft(
        honest,
        tmp_path / "b.lfz",
        sql,
        manifest=lambda m: m.update(campaign_id=climb),
        keep_files=False,
    )
    images = sorted((victim / "campaigns" / "victim").rglob("*.png"))
    assert images
    refused(victim, bad, "campaign_id '../../../victim', expected 1-100 letters", "stolen")
    assert sorted((victim / "campaigns" / "victim").rglob("*.png")) == images


def test_the_cli_refuses_in_one_line(honest, tmp_path):
    bad = craft(honest, tmp_path / "b.lfz", {"seeds": "SELECT *, 1 AS extra FROM '{f}'"})
    home = tmp_path / "home"
    for extra in ([], ["--as", "copy"]):
        r = subprocess.run(
            [sys.executable, "-m", "engine.cli.main", "import", str(bad), *extra]
            + ["--home", str(home)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1
        assert "has a column 'extra'" in r.stderr
    assert counts(home)["campaigns"] == 0 and folders(home) == []
