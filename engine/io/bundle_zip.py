"""A bundle's zip read as someone else's file: its manifest and entries are bounded before
they are read or inflated, each entry is hashed while it is written and stopped at its
declared size, and the folder it is unpacked into cleans itself up, even after a kill.

engine/io/bundle.py owns what a bundle means (rows, images, the import's transaction);
this module owns getting its files out of the zip safely.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from engine.core.errors import LatentfuzzError
from store.liveness import holder_of

FORMAT = "latentfuzz-bundle"
BUNDLE_VERSION = 1
MANIFEST = "manifest.json"

#: Largest manifest read (from the zip's header, before reading): a campaign of 100,000
#: files lists them in about 10 MB.
MANIFEST_LIMIT = 32 * 2**20
#: Largest entry unpacked (its declared size, before inflating it).
ENTRY_LIMIT = 4 * 2**30
#: Largest inflated / stored ratio of an entry over RATIO_FLOOR bytes: PNG and Parquet
#: are compressed already (a bundle stores them), while a zip bomb is thousands to one.
RATIO_LIMIT = 100
RATIO_FLOOR = 2**20
CHUNK = 2**20

#: The import's unpacking folders, under <home>/campaigns: `.import-XXXX`, each with an
#: OWNER file its process holds a lock on for as long as it lives.
STAGING_PREFIX = ".import-"
OWNER = ".owner"
#: A staging folder with no OWNER file is its importer's between mkdtemp and the lock, or
#: one left by a latentfuzz that kept no OWNER: removed once this old (seconds).
UNOWNED_GRACE = 600


class BundleError(LatentfuzzError):
    """A bundle that cannot be written or imported (one line, with the fix)."""


def read_manifest(zf: zipfile.ZipFile, path: Path) -> dict[str, Any]:
    """The manifest, its size bounded before it is read, checked against the zip's file
    list (refused: one line)."""
    try:
        info = zf.getinfo(MANIFEST)
    except KeyError:
        raise BundleError(f"{path} has no {MANIFEST}; not a latentfuzz bundle") from None
    if info.file_size > MANIFEST_LIMIT:
        raise BundleError(
            f"{path}: {MANIFEST} is {info.file_size:,} bytes, expected at most "
            f"{MANIFEST_LIMIT:,}; the bundle is damaged or made to exhaust memory: refused"
        )
    try:
        with zf.open(info) as f:
            manifest = json.loads(f.read(MANIFEST_LIMIT + 1))
    except (ValueError, zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError) as e:
        raise BundleError(f"{path}: {MANIFEST} is not valid JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BundleError(f"{path}: {MANIFEST} is not a latentfuzz bundle manifest")
    types = {"bundle_version": int, "schema_version": int, "campaign_id": str, "files": dict}
    for key, kind in types.items():
        if not isinstance(manifest.get(key), kind):
            raise BundleError(
                f"{path}: {MANIFEST} has {key} = {manifest.get(key)!r:.80}, expected a "
                f"{kind.__name__}; the bundle is damaged"
            )
    if manifest["bundle_version"] > BUNDLE_VERSION:
        raise BundleError(
            f"{path} is bundle format {manifest['bundle_version']}, this latentfuzz reads "
            f"up to {BUNDLE_VERSION}; upgrade latentfuzz to import it"
        )
    names = [n for n in zf.namelist() if not n.endswith("/")]
    if len(names) != len(set(names)):
        raise BundleError(f"{path} holds a file name twice; the bundle was altered: refused")
    listed, held = set(manifest["files"]), set(names) - {MANIFEST}
    for name in sorted(held - listed):
        raise BundleError(f"{path} holds {name}, which its manifest does not list; refused")
    for name in sorted(listed - held):
        raise BundleError(f"{path} lacks {name}, which its manifest lists; refused")
    for name in sorted(listed):
        p = PurePosixPath(name)
        if p.is_absolute() or ".." in p.parts or p.parts[0] not in ("tables", "files"):
            raise BundleError(f"{path} holds an unsafe file name {name!r}; refused")
    _check_sizes(zf, manifest, path)
    return manifest


def _check_sizes(zf: zipfile.ZipFile, manifest: dict[str, Any], path: Path) -> None:
    """Every entry's declared size bounded, before anything is inflated; the manifest's
    own `sizes` (bundles written since they were recorded) must match the zip's."""
    sizes = manifest.get("sizes", {})
    if not isinstance(sizes, dict):
        raise BundleError(f"{path}: {MANIFEST} has sizes that are not a mapping; refused")
    for name in manifest["files"]:
        info = zf.getinfo(name)
        if name in sizes and sizes[name] != info.file_size:
            raise BundleError(
                f"{path}: {name} is {info.file_size:,} bytes in the zip, its manifest says "
                f"{sizes[name]!r:.40}; the bundle was altered: refused"
            )
        if info.file_size > ENTRY_LIMIT:
            raise BundleError(
                f"{path}: {name} is {info.file_size:,} bytes unpacked, expected at most "
                f"{ENTRY_LIMIT:,}; the bundle is damaged or made to fill the disk: refused"
            )
        stored = max(info.compress_size, 1)
        if info.file_size > RATIO_FLOOR and info.file_size > RATIO_LIMIT * stored:
            raise BundleError(
                f"{path}: {name} inflates {info.file_size // stored:,} times "
                f"({info.compress_size:,} to {info.file_size:,} bytes), expected at most "
                f"{RATIO_LIMIT} (a zip bomb's ratio); refused"
            )


def check_space(zf: zipfile.ZipFile, manifest: dict[str, Any], folder: Path, path: Path) -> None:
    """The unpacked files fit on the disk of `folder`, before one is written."""
    need = sum(zf.getinfo(n).file_size for n in manifest["files"])
    free = shutil.disk_usage(folder).free
    if need > free:
        raise BundleError(
            f"{path} unpacks to {need:,} bytes, {folder} has {free:,} free; free some space "
            "and import it again"
        )


def extract(zf: zipfile.ZipFile, name: str, digest: str, dest: Path, path: Path) -> None:
    """Entry `name` written to `dest` while its sha256 is computed, stopped as soon as
    it passes its declared size; refused (one line) when the hash differs."""
    info = zf.getinfo(name)
    h, n = hashlib.sha256(), 0
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        with zf.open(info) as src, open(dest, "xb") as out:
            while chunk := src.read(CHUNK):
                n += len(chunk)
                if n > info.file_size:
                    raise BundleError(
                        f"{path}: {name} inflates past its declared {info.file_size:,} "
                        "bytes; the bundle was altered: refused"
                    )
                h.update(chunk)
                out.write(chunk)
    except (zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError, OSError) as e:
        raise BundleError(f"{path}: {name} cannot be unpacked ({e}); refused") from None
    if h.hexdigest() != digest:
        raise BundleError(
            f"{path}: {name} does not match its sha256 in the manifest (changed or "
            "damaged); refused"
        )


def stale_staging(root: Path) -> list[Path]:
    """The staging folders under `root` whose importer is gone (killed: its lock on OWNER
    died with it); a live import's folder is not among them."""
    stale = []
    for folder in sorted(Path(root).glob(f"{STAGING_PREFIX}*")):
        if folder.is_symlink() or not folder.is_dir():
            continue
        owner, dead = folder / OWNER, False
        if owner.is_file():
            dead = holder_of(owner) is None
        else:
            with contextlib.suppress(OSError):
                dead = time.time() - folder.stat().st_mtime > UNOWNED_GRACE
        if dead:
            stale.append(folder)
    return stale


def clean_staging(root: Path) -> list[Path]:
    """Remove the staging folders of killed imports under `root`; returns them."""
    gone = stale_staging(root)
    for folder in gone:
        shutil.rmtree(folder, ignore_errors=True)
    return gone


@contextlib.contextmanager
def staging(root: Path) -> Iterator[Path]:
    """A fresh staging folder under `root`, removed on exit; the leftovers of killed
    imports are removed first. Its OWNER lock tells a later import this one is alive."""
    root.mkdir(parents=True, exist_ok=True)
    clean_staging(root)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=STAGING_PREFIX))
    fd = os.open(tmp / OWNER, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        os.close(fd)
