"""A campaign's rows as a bundle holds them: one Parquet file per table, all columns
(``SELECT *``: columns added later travel without code here), and back into a store.

engine/io/bundle.py owns the bundle file (manifest, hashes, images); this module owns
the rows: export, the scratch database that migrates an older bundle's rows to this
schema, checks them as data (columns, campaign, ranges: a bundle comes from someone
else) and rewrites their id, and the insert.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from store._duckdb import duckdb
from store.admin import CAMPAIGN_TABLES
from store.connection import Store
from store.schema import DDL, KEYS, MIGRATIONS, SCHEMA_VERSION, SEED_STATUSES, UNINDEXED

#: Every table holding a campaign's rows, with the condition that selects them.
TABLES: dict[str, str] = {
    "campaigns": "id = ?",
    **{t: "campaign_id = ?" for t in CAMPAIGN_TABLES},
    "annotations": "kind = 'campaign' AND id = ?",
}
#: The columns that hold the campaign id itself, per table (rewritten by --as).
ID_COLUMNS = {"campaigns": "id", "annotations": "id"}
#: The columns that name a file, relative to the home: each must lie in the campaign's
#: own folder (engine/io/bundle.py checks them), or export would pack any file it names.
PATH_COLUMNS: dict[str, tuple[str, ...]] = {
    "campaigns": ("dir",),
    "seeds": ("seed_image", "result_image", "improvements_image"),
    "generations": ("image",),
    "images": ("path",),
    "archive": ("image",),
}

_COUNT = "{c} >= 0"
_SECONDS = "isfinite({c}) AND {c} >= 0"
_PROBABILITY = "{c} BETWEEN 0 AND 1"
#: What each value must be, beyond its type and NOT NULL (which the schema's own tables
#: check): (column, SQL condition on {c}, what was expected, in words). A NULL passes.
RANGES: dict[str, list[tuple[str, str, str]]] = {
    "campaigns": [
        ("n_seeds", _COUNT, "a count, at least 0"),
        ("evaluations", _COUNT, "a count, at least 0"),
        ("wall_seconds", _SECONDS, "finite seconds, at least 0"),
        ("store_seconds", _SECONDS, "finite seconds, at least 0"),
        (
            "status",
            "{c} IN ('running', 'finished', 'interrupted', 'failed', 'crashed')",
            "a campaign status",
        ),
        ("kind", "{c} IN ('native', 'imported')", "native or imported"),
    ],
    "seeds": [
        ("seed_idx", _COUNT, "a seed number, at least 0"),
        ("iterations", _COUNT, "a count, at least 0"),
        ("evaluations", _COUNT, "a count, at least 0"),
        ("elapsed_s", _SECONDS, "finite seconds, at least 0"),
        ("final_top1", _PROBABILITY, "a probability"),
        ("final_top2", _PROBABILITY, "a probability"),
        ("status", "{c} IN " + str(SEED_STATUSES), "a seed status"),
    ],
    "generations": [
        ("seed_idx", _COUNT, "a seed number, at least 0"),
        ("generation", _COUNT, "a generation number, at least 0"),
        ("evaluations", _COUNT, "a count, at least 0"),
        ("elapsed_s", _SECONDS, "finite seconds, at least 0"),
        ("top1_prob", _PROBABILITY, "a probability"),
        ("top2_prob", _PROBABILITY, "a probability"),
        ("image_frame", _COUNT, "a frame number, at least 0"),
    ],
    "individuals": [
        ("seed_idx", _COUNT, "a seed number, at least 0"),
        ("generation", _COUNT, "a generation number, at least 0"),
        ("individual", _COUNT, "a population slot, at least 0"),
    ],
    "images": [
        ("seed_idx", _COUNT, "a seed number, at least 0"),
        ("kind", "{c} IN ('seed', 'result')", "seed or result"),
    ],
    "archive": [
        ("entry", _COUNT, "an entry number, at least 0"),
        ("seed_idx", _COUNT, "a seed number, at least 0"),
        ("generation", _COUNT, "a generation number, at least 0"),
    ],
    "validity": [
        ("ref", _COUNT, "an entry or seed number, at least 0"),
        ("kind", "{c} IN ('archive', 'result')", "archive or result"),
    ],
    "campaign_metrics": [
        ("evaluations", _COUNT, "a count, at least 0"),
        ("failing_evaluations", "{c} BETWEEN 0 AND evaluations", "0 to evaluations"),
    ],
}


class BundleRowsError(ValueError):
    """A bundle's rows that are not this schema's, not its campaign's, or out of range
    (one line; engine/io/bundle.py names the bundle)."""


def folder_prefix(cid: str) -> str:
    """The start of every path under the campaign's folder, relative to the home."""
    return f"campaigns/{cid}/"


def ident(name: str) -> str:
    """An SQL identifier, quoted: a bundle's column names are someone else's text."""
    return '"' + name.replace('"', '""') + '"'


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _quote_path(p: Path) -> str:
    return str(p).replace("'", "''")


def _columns(con, table: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute(f"DESCRIBE {ident(table)}").fetchall()]


def _string_columns(con, table: str) -> list[str]:
    return [name for name, kind in _columns(con, table) if kind == "VARCHAR"]


def export_rows(store: Store, cid: str, folder: Path) -> tuple[dict[str, int], set[str]]:
    """Write `<table>.parquet` of every table of TABLES into `folder` from one snapshot;
    returns the row count per table and the paths under the campaign folder that the
    rows name."""
    counts, referenced = {}, set()
    with store.read() as con:  # one connection: one consistent snapshot of the rows
        for table, where in TABLES.items():
            dest = Path(folder) / f"{table}.parquet"
            q = f"SELECT * FROM {table} WHERE {where}"
            # COPY takes no prepared parameters: the id is checked, then quoted.
            con.execute(
                f"COPY ({q.replace('?', _quote(cid))}) TO '{_quote_path(dest)}' (FORMAT parquet)"
            )
            counts[table] = con.execute(f"SELECT count(*) FROM ({q})", [cid]).fetchone()[0]
            for col in _string_columns(con, table):
                c = ident(col)
                rows = con.execute(
                    f"SELECT DISTINCT {c} FROM ({q}) WHERE starts_with({c}, ?)",
                    [cid, folder_prefix(cid)],
                ).fetchall()
                referenced.update(r[0] for r in rows)
    return counts, referenced


def stored_paths(store: Store, cid: str) -> list[tuple[str, str]]:
    """(table.column, path) of every path column of campaign `cid`'s rows, distinct: what
    an export would read (a store may hold rows imported before they were checked)."""
    out = []
    with store.read() as con:
        for table, cols in PATH_COLUMNS.items():
            for col in cols:
                c = ident(col)
                sql = f"SELECT DISTINCT {c} FROM {table} WHERE {TABLES[table]} AND {c} IS NOT NULL"
                out += [(f"{table}.{col}", r[0]) for r in con.execute(sql, [cid]).fetchall()]
    return out


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:200]


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:80]}… ({len(text):,} characters)"


def _load(con, files: dict[str, Path], version: int) -> None:
    """The bundle's tables into the scratch database, migrated to this schema."""
    for table, path in files.items():
        try:
            con.execute(
                f"CREATE TABLE {ident(table)} AS SELECT * FROM read_parquet(?)", [str(path)]
            )
        except duckdb.Error as e:
            raise BundleRowsError(
                f"tables/{table}.parquet is not a Parquet table ({_first_line(e)}); the "
                "bundle is damaged or was not written by latentfuzz"
            ) from None
    try:
        for v in range(version + 1, SCHEMA_VERSION + 1):
            for stmt in MIGRATIONS.get(v, []):
                stmt(con) if callable(stmt) else con.execute(stmt)
    except duckdb.Error as e:
        raise BundleRowsError(
            f"its rows do not migrate from store schema {version} ({_first_line(e)}); the "
            "bundle is damaged or its schema_version is wrong"
        ) from None


def _typed(con, tables: list[str]) -> None:
    """Each loaded table's rows moved into the schema's own table (DDL): exactly its
    columns, by name, with its types, NOT NULL and keys checked by DuckDB itself."""
    for table in tables:
        con.execute(f"ALTER TABLE {ident(table)} RENAME TO {ident('bundle ' + table)}")
    for stmt in DDL:
        con.execute(stmt)
    for table in tables:
        want = [c for c, _ in _columns(con, table)]
        have = [c for c, _ in _columns(con, f"bundle {table}")]
        where = f"tables/{table}.parquet"
        for col in have:
            if col not in want:
                raise BundleRowsError(
                    f"{where} has a column {_short(col)} that store schema {SCHEMA_VERSION} "
                    f"has not (it has {', '.join(want)}); the bundle was altered: refused"
                )
        for col in want:
            if col not in have:
                raise BundleRowsError(
                    f"{where} lacks the column {col!r} of store schema {SCHEMA_VERSION}; "
                    "the bundle was altered or its schema_version is wrong: refused"
                )
        cols = ", ".join(map(ident, want))
        try:
            con.execute(
                f"INSERT INTO {ident(table)} ({cols}) SELECT {cols} FROM {ident('bundle ' + table)}"
            )
        except duckdb.Error as e:
            raise BundleRowsError(
                f"{where} holds rows this schema refuses ({_first_line(e)}); refused"
            ) from None
        con.execute(f"DROP TABLE {ident('bundle ' + table)}")


def _check(con, old: str) -> None:
    """Every row is campaign `old`'s, and every value of RANGES in range."""
    for table in TABLES:
        idc = ident(ID_COLUMNS.get(table, "campaign_id"))
        foreign = f"{idc} IS DISTINCT FROM $old"
        if table == "annotations":
            foreign += " OR kind IS DISTINCT FROM 'campaign'"
        hit = con.execute(
            f"SELECT {idc}, count(*) OVER () FROM {ident(table)} WHERE {foreign} LIMIT 1",
            {"old": old},
        ).fetchone()
        if hit:
            raise BundleRowsError(
                f"tables/{table}.parquet holds {hit[1]:,} rows of campaign {_short(hit[0])}, "
                f"expected only campaign {old!r}'s (its manifest's): refused"
            )
    for table in sorted(UNINDEXED):  # no index refuses a second copy of a row (schema.py)
        keys = ", ".join(map(ident, (k.strip() for k in KEYS[table].split(","))))
        dup = con.execute(
            f"SELECT count(*) FROM (SELECT {keys} FROM {ident(table)} GROUP BY ALL "
            "HAVING count(*) > 1)"
        ).fetchone()[0]
        if dup:
            raise BundleRowsError(
                f"tables/{table}.parquet holds {dup:,} keys ({KEYS[table]}) more than once, "
                "expected each once; the bundle was altered: refused"
            )
    for table, checks in RANGES.items():
        for col, cond, words in checks:
            c = ident(col)
            hit = con.execute(
                f"SELECT {c}, count(*) OVER () FROM {ident(table)} "
                f"WHERE NOT ({cond.format(c=c)}) LIMIT 1"
            ).fetchone()
            if hit:
                raise BundleRowsError(
                    f"tables/{table}.parquet has {col} = {_short(hit[0])} in {hit[1]:,} rows, "
                    f"expected {words}: refused"
                )


def _rewrite_id(con, old: str, new: str) -> None:
    """--as: the new id in every id column and every path under the campaign folder."""
    for table in TABLES:
        cols = _string_columns(con, table)
        idc = ident(ID_COLUMNS.get(table, "campaign_id"))
        sets = [f"{idc} = CASE WHEN {idc} = $old THEN $new ELSE {idc} END"]
        for col in map(ident, cols):
            if col == idc:
                continue
            sets.append(
                f"{col} = CASE WHEN starts_with({col}, $po) THEN $pn || "
                f"substr({col}, {len(folder_prefix(old)) + 1}) WHEN {col} = $d THEN $dn "
                f"ELSE {col} END"
            )
        params = {"old": old, "new": new}
        if len(sets) > 1:
            params.update(
                po=folder_prefix(old),
                pn=folder_prefix(new),
                d=f"campaigns/{old}",
                dn=f"campaigns/{new}",
            )
        con.execute(f"UPDATE {ident(table)} SET {', '.join(sets)}", params)
    # A campaign without a name of its own is shown by its id: the new one (its page was
    # titled with the old id, its caption said the new one).
    con.execute("UPDATE campaigns SET name = $new WHERE name = $old", {"old": old, "new": new})


def bundle_rows(
    files: dict[str, Path], version: int, old: str, new: str
) -> tuple[list[str], dict[str, pa.Table]]:
    """A bundle's rows (`files`: table -> Parquet file, tables of TABLES, `campaigns`
    among them) in a scratch in-memory database, migrated from schema `version` to this
    one with the store's own migrations (the steps an old store file takes), checked as
    data (exactly the schema's columns and types, every row campaign `old`'s, values in
    RANGES; BundleRowsError in one line), then their id rewritten from `old` to `new`
    when they differ. Returns the campaign ids the rows held before the rewrite, and
    every table of TABLES as Arrow."""
    con = duckdb.connect(":memory:")
    try:
        _load(con, files, version)
        _typed(con, list(files))
        ids = [r[0] for r in con.execute("SELECT id FROM campaigns").fetchall()]
        if ids == [old]:
            _check(con, old)
            if new != old:
                _rewrite_id(con, old, new)
        return ids, {t: con.sql(f"SELECT * FROM {ident(t)}").to_arrow_table() for t in TABLES}
    finally:
        con.close()


def path_values(rows: dict[str, pa.Table]) -> list[tuple[str, str]]:
    """(table.column, path) of every distinct path that the rows' PATH_COLUMNS name."""
    out = []
    for table, cols in PATH_COLUMNS.items():
        for col in cols:
            values = pc.unique(rows[table].column(col)).drop_null().to_pylist()
            out += [(f"{table}.{col}", v) for v in values]
    return out


def insert_rows(con, rows: dict[str, pa.Table]) -> None:
    """Inside the import's write: every table's rows (Arrow), by column name."""
    for table, arrow in rows.items():
        if arrow.num_rows:
            con.register("bundle_rows", arrow)
            con.execute(f"INSERT INTO {ident(table)} BY NAME SELECT * FROM bundle_rows")
            con.unregister("bundle_rows")
