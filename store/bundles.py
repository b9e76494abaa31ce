"""A campaign's rows as a bundle holds them: one Parquet file per table, all columns
(``SELECT *``: columns added later travel without code here), and back into a store.

engine/io/bundle.py owns the bundle file (manifest, hashes, images); this module owns
the rows: export, the scratch database that migrates an older bundle's rows to this
schema and rewrites their id, and the insert.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from store.admin import CAMPAIGN_TABLES
from store.connection import Store
from store.schema import DDL, MIGRATIONS, SCHEMA_VERSION

#: Every table holding a campaign's rows, with the condition that selects them.
TABLES: dict[str, str] = {
    "campaigns": "id = ?",
    **{t: "campaign_id = ?" for t in CAMPAIGN_TABLES},
    "annotations": "kind = 'campaign' AND id = ?",
}
#: The columns that hold the campaign id itself, per table (rewritten by --as).
ID_COLUMNS = {"campaigns": "id", "annotations": "id"}


def folder_prefix(cid: str) -> str:
    """The start of every path under the campaign's folder, relative to the home."""
    return f"campaigns/{cid}/"


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _quote_path(p: Path) -> str:
    return str(p).replace("'", "''")


def _string_columns(con, table: str) -> list[str]:
    return [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall() if r[1] == "VARCHAR"]


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
                rows = con.execute(
                    f"SELECT DISTINCT {col} FROM ({q}) WHERE starts_with({col}, ?)",
                    [cid, folder_prefix(cid)],
                ).fetchall()
                referenced.update(r[0] for r in rows)
    return counts, referenced


def _rewrite_id(con, old: str, new: str) -> None:
    """--as: the new id in every id column and every path under the campaign folder."""
    for table in TABLES:
        cols = _string_columns(con, table)
        idc = ID_COLUMNS.get(table, "campaign_id")
        sets = [f"{idc} = CASE WHEN {idc} = $old THEN $new ELSE {idc} END"]
        for col in cols:
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
        con.execute(f"UPDATE {table} SET {', '.join(sets)}", params)
    # A campaign without a name of its own is shown by its id: the new one (its page was
    # titled with the old id, its caption said the new one).
    con.execute("UPDATE campaigns SET name = $new WHERE name = $old", {"old": old, "new": new})


def bundle_rows(
    files: dict[str, Path], version: int, old: str, new: str
) -> tuple[list[str], dict[str, pa.Table]]:
    """A bundle's rows (`files`: table -> Parquet file, tables of TABLES, `campaigns`
    among them) in a scratch in-memory database, migrated from schema `version` to this
    one with the store's own migrations (the steps an old store file takes), then their
    id rewritten from `old` to `new` when they differ. Returns the campaign ids the rows
    held before the rewrite, and every table of TABLES as Arrow."""
    con = duckdb.connect(":memory:")
    try:
        for table, path in files.items():
            con.execute(
                f"CREATE TABLE {table} AS SELECT * FROM read_parquet('{_quote_path(path)}')"
            )
        for v in range(version + 1, SCHEMA_VERSION + 1):
            for stmt in MIGRATIONS.get(v, []):
                stmt(con) if callable(stmt) else con.execute(stmt)
        for stmt in DDL:
            con.execute(stmt)
        ids = [r[0] for r in con.execute("SELECT id FROM campaigns").fetchall()]
        if new != old and ids == [old]:
            _rewrite_id(con, old, new)
        return ids, {t: con.sql(f"SELECT * FROM {t}").to_arrow_table() for t in TABLES}
    finally:
        con.close()


def insert_rows(con, rows: dict[str, pa.Table]) -> None:
    """Inside the import's write: every table's rows (Arrow), by column name."""
    for table, arrow in rows.items():
        if arrow.num_rows:
            con.register("bundle_rows", arrow)
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM bundle_rows")
            con.unregister("bundle_rows")
