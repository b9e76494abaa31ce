"""Campaign bundles: one campaign's rows and images in one file that any latentfuzz home
imports, to share or archive a campaign, or to bring a grid cell's results home.

A bundle is always a zip file (the name is free; `.lfz` by convention), written to a
temporary name and renamed, so a bundle is whole or absent. It holds:

- ``manifest.json``: bundle format version, store schema version, the campaign id, its
  config and environment, and the sha256 of every other file;
- ``tables/<table>.parquet``: the campaign's rows of every campaign table, all columns
  (``SELECT *``: columns added later travel without code here), written by DuckDB;
- ``files/campaigns/<id>/...``: the files of the campaign folder that its rows name,
  under their path relative to the home.

Import checks every hash and the file list, brings an older schema's rows up to date with
the store's own migrations (run on the rows in a scratch database), refuses a newer
schema and a duplicate id (``--as NEW_ID`` rewrites the id in rows and paths), and writes
the rows in one transaction, the images extracted to a temporary folder first and renamed
into place inside that transaction: nothing is half-written on failure.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import duckdb

from engine.core.errors import LatentfuzzError
from store import SCHEMA_VERSION, Store, queries
from store.admin import CAMPAIGN_TABLES
from store.liveness import alive
from store.schema import DDL, MIGRATIONS

BUNDLE_VERSION = 1
FORMAT = "latentfuzz-bundle"
MANIFEST = "manifest.json"

#: Every table holding a campaign's rows, with the condition that selects them.
TABLES: dict[str, str] = {
    "campaigns": "id = ?",
    **{t: "campaign_id = ?" for t in CAMPAIGN_TABLES},
    "annotations": "kind = 'campaign' AND id = ?",
}
#: The columns that hold the campaign id itself, per table (rewritten by --as).
ID_COLUMNS = {"campaigns": "id", "annotations": "id"}


class BundleError(LatentfuzzError):
    """A bundle that cannot be written or imported (one line, with the fix)."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _prefix(cid: str) -> str:
    return f"campaigns/{cid}/"


def _string_columns(con, table: str) -> list[str]:
    return [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall() if r[1] == "VARCHAR"]


def export_bundle(store: Store, home: Path, cid: str, out: Path) -> dict[str, Any]:
    """Write campaign `cid` as a bundle at `out`; returns the manifest."""
    from importlib.metadata import version

    home, out = Path(home), Path(out)
    c = queries.campaign(store, cid)
    if c is None:
        raise BundleError(f"no campaign {cid!r}; `latentfuzz campaigns` lists them")
    if c["status"] == "running" and alive(home, cid):
        raise BundleError(f"campaign {cid} is running; export it once it has finished")
    if out.is_dir():
        raise BundleError(f"{out} is a folder, expected the bundle file to write (a zip)")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as tmp:
        tables, referenced = {}, set()
        with store.read() as con:  # one connection: one consistent snapshot of the rows
            for table, where in TABLES.items():
                dest = Path(tmp) / f"{table}.parquet"
                q = f"SELECT * FROM {table} WHERE {where}"
                # COPY takes no prepared parameters: the id is checked, then quoted.
                con.execute(
                    f"COPY ({q.replace('?', _quote(cid))}) TO '{_quote_path(dest)}' "
                    "(FORMAT parquet)"
                )
                tables[table] = con.execute(f"SELECT count(*) FROM ({q})", [cid]).fetchone()[0]
                for col in _string_columns(con, table):
                    rows = con.execute(
                        f"SELECT DISTINCT {col} FROM ({q}) WHERE starts_with({col}, ?)",
                        [cid, _prefix(cid)],
                    ).fetchall()
                    referenced.update(r[0] for r in rows)
        files = {f"tables/{t}.parquet": Path(tmp) / f"{t}.parquet" for t in tables}
        for rel in sorted(referenced):
            src = home / rel
            if not src.is_file():
                # A strip of a seed that never finished is still its raw frame file.
                side = src.with_suffix(".frames")
                if not side.is_file():
                    raise BundleError(
                        f"{src} is named by campaign {cid}'s rows but missing; "
                        "`latentfuzz doctor` lists what the campaign folder lacks"
                    )
                src, rel = side, str(PurePosixPath(rel).with_suffix(".frames"))
            files[f"files/{rel}"] = src
        manifest = {
            "format": FORMAT, "bundle_version": BUNDLE_VERSION,
            "schema_version": SCHEMA_VERSION, "campaign_id": cid,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "latentfuzz": version("latentfuzz"), "config": c["config"],
            "environment": c["environment"], "rows": tables,
            "files": {name: _sha256(p) for name, p in files.items()},
        }  # fmt: skip
        part = Path(tmp) / "bundle.zip"
        # Stored, not deflated: PNG and Parquet are compressed already.
        with zipfile.ZipFile(part, "w", compression=zipfile.ZIP_STORED) as zf:
            zf.writestr(MANIFEST, json.dumps(manifest, indent=1, default=str))
            for name, p in files.items():
                zf.write(p, name)
        os.replace(part, out)
    return manifest


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _quote_path(p: Path) -> str:
    return str(p).replace("'", "''")


def read_manifest(zf: zipfile.ZipFile, path: Path) -> dict[str, Any]:
    """The manifest, checked against the zip's file list (refused: one line)."""
    try:
        manifest = json.loads(zf.read(MANIFEST))
    except KeyError:
        raise BundleError(f"{path} has no {MANIFEST}; not a latentfuzz bundle") from None
    except ValueError as e:
        raise BundleError(f"{path}: {MANIFEST} is not valid JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BundleError(f"{path}: {MANIFEST} is not a latentfuzz bundle manifest")
    types = {"bundle_version": int, "schema_version": int, "campaign_id": str, "files": dict}
    for key, kind in types.items():
        if not isinstance(manifest.get(key), kind):
            raise BundleError(
                f"{path}: {MANIFEST} has {key} = {manifest.get(key)!r}, expected a "
                f"{kind.__name__}; the bundle is damaged"
            )
    if int(manifest.get("bundle_version", 0)) > BUNDLE_VERSION:
        raise BundleError(
            f"{path} is bundle format {manifest['bundle_version']}, this latentfuzz reads "
            f"up to {BUNDLE_VERSION}; upgrade latentfuzz to import it"
        )
    listed = set(manifest.get("files", {}))
    held = {n for n in zf.namelist() if not n.endswith("/")} - {MANIFEST}
    for name in sorted(held - listed):
        raise BundleError(f"{path} holds {name}, which its manifest does not list; refused")
    for name in sorted(listed - held):
        raise BundleError(f"{path} lacks {name}, which its manifest lists; refused")
    for name in sorted(listed):
        p = PurePosixPath(name)
        if p.is_absolute() or ".." in p.parts or p.parts[0] not in ("tables", "files"):
            raise BundleError(f"{path} holds an unsafe file name {name!r}; refused")
    return manifest


def _scratch(tmp: Path, manifest: dict[str, Any], path: Path) -> duckdb.DuckDBPyConnection:
    """The bundle's rows in an in-memory database, migrated to this schema."""
    version = int(manifest.get("schema_version", 0))
    if version > SCHEMA_VERSION:
        raise BundleError(
            f"{path} was written with store schema {version}, this latentfuzz knows "
            f"{SCHEMA_VERSION}; upgrade latentfuzz to import it"
        )
    con = duckdb.connect(":memory:")
    for name in manifest["files"]:
        if name.startswith("tables/"):
            table = PurePosixPath(name).stem
            if table not in TABLES:
                raise BundleError(f"{path} holds rows of an unknown table {table!r}; refused")
            con.execute(
                f"CREATE TABLE {table} AS SELECT * FROM read_parquet('{_quote_path(tmp / name)}')"
            )
    if "campaigns" not in {r[0] for r in con.execute("SHOW TABLES").fetchall()}:
        raise BundleError(f"{path} holds no campaign row; refused")
    # The store's own migrations, on these rows: the same steps an old store file takes.
    for v in range(version + 1, SCHEMA_VERSION + 1):
        for stmt in MIGRATIONS.get(v, []):
            stmt(con) if callable(stmt) else con.execute(stmt)
    for stmt in DDL:
        con.execute(stmt)
    return con


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
                f"substr({col}, {len(_prefix(old)) + 1}) WHEN {col} = $d THEN $dn "
                f"ELSE {col} END"
            )
        params = {"old": old, "new": new}
        if len(sets) > 1:
            params.update(po=_prefix(old), pn=_prefix(new), d=f"campaigns/{old}",
                          dn=f"campaigns/{new}")  # fmt: skip
        con.execute(f"UPDATE {table} SET {', '.join(sets)}", params)
    # A campaign without a name of its own is shown by its id: the new one (its page was
    # titled with the old id, its caption said the new one).
    con.execute("UPDATE campaigns SET name = $new WHERE name = $old", {"old": old, "new": new})


def _refuse_duplicate(home: Path, cid: str, new_id: str | None, taken: bool) -> None:
    if taken or (home / "campaigns" / cid).exists():
        hint = (
            "; choose another --as" if new_id else "; import it under another id with --as NEW_ID"
        )
        raise BundleError(f"campaign {cid} is already in {home}{hint}")


def import_bundle(
    store: Store, home: Path, path: Path, new_id: str | None = None,
    in_transaction: Callable[[Any, str], None] | None = None,
) -> str:  # fmt: skip
    """Import the bundle at `path` into `store` (home `home`); returns the campaign id.
    `in_transaction(con, id)` runs inside the import's transaction (a grid records its
    cell there, so the cell is done exactly when its rows are in)."""
    from engine.core.ids import check_id_syntax

    home, path = Path(home), Path(path)
    if path.is_dir():
        raise BundleError(f"{path} is a folder; give the bundle file (a zip written by "
                          "`export --bundle`)")  # fmt: skip
    if not path.is_file():
        raise BundleError(f"no bundle file {path}; expected a zip written by `export --bundle`")
    store.require_writable()
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise BundleError(f"{path} is not a zip file; not a latentfuzz bundle") from None
    (home / "campaigns").mkdir(parents=True, exist_ok=True)
    with zf, tempfile.TemporaryDirectory(dir=home / "campaigns", prefix=".import-") as t:
        tmp = Path(t)
        manifest = read_manifest(zf, path)
        for name, digest in manifest["files"].items():
            zf.extract(name, tmp)
            if _sha256(tmp / name) != digest:
                raise BundleError(
                    f"{path}: {name} does not match its sha256 in the manifest (changed or "
                    "damaged); refused"
                )
        old = manifest["campaign_id"]
        cid = old if new_id is None else new_id  # `--as ""` is checked, not ignored
        check_id_syntax(cid, flag="--as")
        _refuse_duplicate(home, cid, new_id, queries.campaign(store, cid) is not None)
        con = _scratch(tmp, manifest, path)
        ids = [r[0] for r in con.execute("SELECT id FROM campaigns").fetchall()]
        if ids != [old]:
            raise BundleError(f"{path} holds campaign rows {ids}, its manifest names {old!r}")
        if cid != old:
            _rewrite_id(con, old, cid)
        rows = {t: con.sql(f"SELECT * FROM {t}").to_arrow_table() for t in TABLES}
        con.close()
        images = tmp / "files" / "campaigns" / old
        inside = f"files/{_prefix(old)}"
        stray = [
            n for n in manifest["files"] if n.startswith("files/") and not n.startswith(inside)
        ]
        if stray:
            raise BundleError(f"{path} holds {stray[0]}, outside campaign {old}'s folder")
        images.mkdir(parents=True, exist_ok=True)
        final = home / "campaigns" / cid
        moved = False
        try:
            with store.write(checkpoint=True) as wcon:
                taken = wcon.execute("SELECT 1 FROM campaigns WHERE id = ?", [cid]).fetchone()
                _refuse_duplicate(home, cid, new_id, bool(taken))
                for table, arrow in rows.items():
                    if arrow.num_rows:
                        wcon.register("bundle_rows", arrow)
                        wcon.execute(f"INSERT INTO {table} BY NAME SELECT * FROM bundle_rows")
                        wcon.unregister("bundle_rows")
                if in_transaction is not None:
                    in_transaction(wcon, cid)
                os.rename(images, final)  # last: a failed insert leaves no folder behind
                moved = True
        except BaseException:
            if moved and queries.campaign(store, cid) is None:
                with contextlib.suppress(OSError):
                    shutil.rmtree(final)
            raise
    return cid
