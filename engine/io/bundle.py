"""Campaign bundles: one campaign's rows and images in one file that any latentfuzz home
imports, to share or archive a campaign, or to bring a grid cell's results home.

A bundle is always a zip file (the name is free; `.lfz` by convention), written to a
temporary name and renamed, so a bundle is whole or absent. It holds:

- ``manifest.json``: bundle format version, store schema version, the campaign id, its
  config and environment, and the sha256 and size of every other file;
- ``tables/<table>.parquet``: the campaign's rows of every campaign table, all columns
  (all columns: store/bundles.py), written by DuckDB;
- ``files/campaigns/<id>/...``: the files of the campaign folder that its rows name,
  under their path relative to the home.

Import checks every hash and the file list, brings an older schema's rows up to date with
the store's own migrations (run on the rows in a scratch database), refuses a newer
schema and a duplicate id (``--as NEW_ID`` rewrites the id in rows and paths), and writes
the rows in one transaction, the images extracted to a staging folder first and renamed
into place inside that transaction: nothing is half-written on failure.

A bundle comes from someone else, so it is checked as data, not trusted as rows: sizes
before anything is inflated (engine/io/bundle_zip.py), exactly the schema's columns,
every row its own campaign's, values in range (store/bundles.py), and every path its
rows name inside the campaign's own folder (engine/core/untrusted.py); export refuses a
stored path outside that folder too.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path, PurePosixPath
from typing import Any

from engine.core.files import sha256
from engine.core.ids import ID_PATTERN, check_id_syntax
from engine.core.untrusted import inside, quote
from engine.io.bundle_zip import (
    BUNDLE_VERSION,
    FORMAT,
    MANIFEST,
    BundleError,
    check_space,
    extract,
    read_manifest,
    staging,
)
from store import SCHEMA_VERSION, Store
from store import bundles as sb
from store import campaigns as sc
from store.admin import CHECKPOINT_FILES
from store.liveness import alive
from store.maintenance import require_sound
from store.writer import campaign_exists

__all__ = ["BundleError", "export_bundle", "import_bundle", "read_manifest"]


def _inside_folder(home: Path, cid: str, rel: str, field: str, source: str) -> Path:
    """`rel` (a path relative to the home, as rows hold them) resolved, when it lies in
    campaign `cid`'s folder; else UntrustedFileError naming `field`."""
    folder = home / "campaigns" / cid
    return inside(folder, home / rel, field, source=source)


def export_bundle(store: Store, home: Path, cid: str, out: Path) -> dict[str, Any]:
    """Write campaign `cid` as a bundle at `out`; returns the manifest."""

    home, out = Path(home), Path(out)
    c = sc.campaign(store, cid)
    if c is None:
        raise BundleError(f"no campaign {cid!r}; `latentfuzz campaigns` lists them")
    if c["status"] == "running" and alive(home, cid):
        raise BundleError(f"campaign {cid} is running; export it once it has finished")
    if out.is_dir():
        raise BundleError(f"{out} is a folder, expected the bundle file to write (a zip)")
    # A store may hold rows imported before their paths were checked: such a path is
    # refused here, not packed (nor carried to the next home, whose import refuses it).
    for field, rel in sb.stored_paths(store, cid):
        _inside_folder(home, cid, rel, field, f"campaign {cid}'s rows")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as tmp:
        tables, referenced = sb.export_rows(store, cid, Path(tmp))
        files = {f"tables/{t}.parquet": Path(tmp) / f"{t}.parquet" for t in tables}
        for rel in sorted(referenced):
            src = _inside_folder(home, cid, rel, "a column", f"campaign {cid}'s rows")
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
            "format": FORMAT,
            "bundle_version": BUNDLE_VERSION,
            "schema_version": SCHEMA_VERSION,
            "campaign_id": cid,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "latentfuzz": version("latentfuzz"),
            "config": c["config"],
            "environment": c["environment"],
            "rows": tables,
            "files": {name: sha256(p) for name, p in files.items()},
            # Checked against the zip's own sizes on import, before anything is inflated.
            "sizes": {name: p.stat().st_size for name, p in files.items()},
        }
        part = Path(tmp) / "bundle.zip"
        # Stored, not deflated: PNG and Parquet are compressed already.
        with zipfile.ZipFile(part, "w", compression=zipfile.ZIP_STORED) as zf:
            zf.writestr(MANIFEST, json.dumps(manifest, indent=1, default=str))
            for name, p in files.items():
                zf.write(p, name)
        os.replace(part, out)
    return manifest


def _bundle_rows(tmp: Path, manifest: dict[str, Any], path: Path, cid: str) -> dict[str, Any]:
    """The bundle's rows, migrated to this schema, under id `cid` (Arrow per table)."""
    version = int(manifest.get("schema_version", 0))
    if version > SCHEMA_VERSION:
        raise BundleError(
            f"{path} was written with store schema {version}, this latentfuzz knows "
            f"{SCHEMA_VERSION}; upgrade latentfuzz to import it"
        )
    files = {}
    for name in manifest["files"]:
        if name.startswith("tables/"):
            table = PurePosixPath(name).stem
            if table not in sb.TABLES:
                raise BundleError(f"{path} holds rows of an unknown table {table!r}; refused")
            files[table] = tmp / name
    if "campaigns" not in files:
        raise BundleError(f"{path} holds no campaign row; refused")
    old = manifest["campaign_id"]
    try:
        ids, rows = sb.bundle_rows(files, version, old, cid)
    except sb.BundleRowsError as e:
        raise BundleError(f"{path}: {e}") from None
    if ids != [old]:
        raise BundleError(f"{path} holds campaign rows {ids}, its manifest names {old!r}")
    return rows


def _refuse_duplicate(home: Path, cid: str, new_id: str | None, taken: bool) -> None:
    if taken or (home / "campaigns" / cid).exists():
        hint = (
            "; choose another --as" if new_id else "; import it under another id with --as NEW_ID"
        )
        raise BundleError(f"campaign {cid} is already in {home}{hint}")


def import_bundle(
    store: Store,
    home: Path,
    path: Path,
    new_id: str | None = None,
    in_transaction: Callable[[Any, str], None] | None = None,
) -> str:
    """Import the bundle at `path` into `store` (home `home`); returns the campaign id.
    `in_transaction(con, id)` runs inside the import's transaction (a grid records its
    cell there, so the cell is done exactly when its rows are in)."""

    home, path = Path(home), Path(path)
    if path.is_dir():
        raise BundleError(
            f"{path} is a folder; give the bundle file (a zip written by `export --bundle`)"
        )
    if not path.is_file():
        raise BundleError(f"no bundle file {path}; expected a zip written by `export --bundle`")
    store.require_writable()
    require_sound(store)
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise BundleError(f"{path} is not a zip file ({e}); not a latentfuzz bundle") from None
    with zf, staging(home / "campaigns") as tmp:
        manifest = read_manifest(zf, path)
        old = manifest["campaign_id"]
        # The bundle's own id names the folder its images are moved from: `../..` moved
        # another campaign's folder.
        if not ID_PATTERN.fullmatch(old):
            raise BundleError(
                f"{path}: {MANIFEST} has campaign_id {quote(old)}, expected 1-100 letters, "
                "digits, '.', '_' or '-'; the bundle was altered: refused"
            )
        cid = old if new_id is None else new_id  # `--as ""` is checked, not ignored
        check_id_syntax(cid, flag="--as")
        _refuse_duplicate(home, cid, new_id, sc.campaign(store, cid) is not None)
        inside_old = f"files/{sb.folder_prefix(old)}"
        stray = [
            n for n in manifest["files"] if n.startswith("files/") and not n.startswith(inside_old)
        ]
        if stray:
            raise BundleError(f"{path} holds {stray[0]}, outside campaign {old}'s folder")
        # A resume restores a campaign's checkpoint as it finds it: one only ever comes
        # from this machine's own run (engine/campaign/checkpoint.py), never from a bundle.
        carried = [n for n in manifest["files"] if PurePosixPath(n).name in CHECKPOINT_FILES]
        if carried:
            raise BundleError(
                f"{path} holds {quote(carried[0])}, a search checkpoint, which no bundle "
                "carries (export writes none); the bundle was altered: refused"
            )
        check_space(zf, manifest, tmp, path)
        for name, digest in manifest["files"].items():
            extract(zf, name, str(digest), tmp / name, path)
        rows = _bundle_rows(tmp, manifest, path, cid)
        for field, rel in sb.path_values(rows):
            _inside_folder(home, cid, rel, field, str(path))
        images = tmp / "files" / "campaigns" / old
        images.mkdir(parents=True, exist_ok=True)
        final = home / "campaigns" / cid
        moved = False
        try:
            with store.write(checkpoint=True) as wcon:
                _refuse_duplicate(home, cid, new_id, campaign_exists(wcon, cid))
                sb.insert_rows(wcon, rows)
                if in_transaction is not None:
                    in_transaction(wcon, cid)
                os.rename(images, final)  # last: a failed insert leaves no folder behind
                moved = True
        except BaseException:
            if moved and sc.campaign(store, cid) is None:
                with contextlib.suppress(OSError):
                    shutil.rmtree(final)
            raise
    return cid
