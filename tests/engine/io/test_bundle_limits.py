"""A bundle's manifest and entries are bounded before they are read or inflated (a
whitespace manifest and a zip bomb cost neither memory nor disk), an entry stops at its
declared size, and a killed import's staging folder is removed by the next one."""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from engine.io import bundle_zip
from engine.io.bundle import BundleError, import_bundle
from engine.io.doctor import check
from tests.engine.io.test_bundle import db
from tests.engine.io.test_bundle_rows import counts

MiB = 2**20


@pytest.fixture
def inflated(monkeypatch) -> dict[str, int]:
    """Bytes inflated per zip member, counted where zipfile hands them out."""
    seen: dict[str, int] = {}
    read = zipfile.ZipExtFile.read

    def counting(self, n=-1):
        data = read(self, n)
        seen[self.name] = seen.get(self.name, 0) + len(data)
        return data

    monkeypatch.setattr(zipfile.ZipExtFile, "read", counting)
    return seen


def rezip(bundle: Path, out: Path, big: dict[str, int], manifest=None) -> Path:
    """`bundle` with members of `big` (name -> bytes) replaced by that many spaces or
    zeros, deflated in a stream (a few hundred KB on disk, in memory, for the test)."""
    with zipfile.ZipFile(bundle) as zin, zipfile.ZipFile(out, "w") as zout:
        for name in zin.namelist():
            data = zin.read(name)
            if name == "manifest.json" and manifest is not None:
                m = json.loads(data)
                manifest(m)
                data = json.dumps(m).encode()
            if name not in big:
                zout.writestr(name, data)
                continue
            fill = b" " if name == "manifest.json" else b"\0"
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            with zout.open(info, "w", force_zip64=True) as f:
                f.write(data if name == "manifest.json" else b"")
                for _ in range(big[name] // MiB):
                    f.write(fill * MiB)
    return out


def nothing_left(home: Path) -> None:
    assert counts(home)["campaigns"] == 0
    assert list((home / "campaigns").iterdir()) == []


def test_a_whitespace_manifest_is_refused_before_it_is_read(honest, tmp_path, inflated):
    bomb = rezip(honest, tmp_path / "m.lfz", {"manifest.json": 48 * MiB})
    assert bomb.stat().st_size < 2 * MiB
    home = tmp_path / "home"
    inflated.clear()  # (the test's own reads, making the bundle)
    with pytest.raises(BundleError, match=r"manifest\.json is 50,[\d,]+ bytes, expected at most"):
        import_bundle(db(home), home, bomb)
    assert inflated.get("manifest.json", 0) == 0
    nothing_left(home)


def test_a_deflated_bomb_with_a_wrong_hash_is_refused_before_inflating(
    honest, tmp_path, inflated, monkeypatch
):
    name = "tables/seeds.parquet"
    # A wrong hash and no sizes: what a bundle made to fill the disk says.
    wrong = lambda m: (m["files"].update({name: "0" * 64}), m.pop("sizes", None))  # noqa: E731
    bomb = rezip(honest, tmp_path / "e.lfz", {name: 300 * MiB}, wrong)
    assert bomb.stat().st_size < 2 * MiB
    home = tmp_path / "home"
    inflated.clear()
    with pytest.raises(BundleError, match=rf"{name} inflates [\d,]+ times .*a zip bomb"):
        import_bundle(db(home), home, bomb)
    # A ratio that passes, a size that does not: still refused before inflating.
    monkeypatch.setattr(bundle_zip, "RATIO_LIMIT", 10**6)
    monkeypatch.setattr(bundle_zip, "ENTRY_LIMIT", 16 * MiB)
    with pytest.raises(BundleError, match=rf"{name} is 314,572,800 bytes unpacked, expected"):
        import_bundle(db(home), home, bomb)
    assert inflated.get(name, 0) == 0
    nothing_left(home)


def _lie_about_size(path: Path, name: str, size: int) -> None:
    """The zip's headers (local and central) say `name` inflates to `size` bytes."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info, start = zf.getinfo(name), zf.start_dir
    struct.pack_into("<I", data, info.header_offset + 22, size)
    at = start
    while data[at : at + 4] == b"PK\x01\x02":
        n, m, k = struct.unpack_from("<HHH", data, at + 28)
        if data[at + 46 : at + 46 + n].decode() == name:
            struct.pack_into("<I", data, at + 24, size)
        at += 46 + n + m + k
    path.write_bytes(data)


def test_an_entry_stops_at_its_declared_size(honest, tmp_path, inflated, monkeypatch):
    name = "tables/seeds.parquet"
    declare = lambda m: m.setdefault("sizes", {}).update({name: MiB})  # noqa: E731
    bad = rezip(honest, tmp_path / "s.lfz", {name: 64 * MiB}, declare)
    _lie_about_size(bad, name, MiB)
    home = tmp_path / "home"
    monkeypatch.setattr(bundle_zip, "CHUNK", 64 * 2**10)  # reads counted before the last
    inflated.clear()
    with pytest.raises(BundleError, match=f"{name} (cannot be unpacked|inflates past)"):
        import_bundle(db(home), home, bad)
    assert 0 < inflated[name] <= MiB
    nothing_left(home)


CHILD = """
import sys, time
from pathlib import Path
from engine.io.bundle import import_bundle
from store import Store

home = Path(sys.argv[1])

def hold(con, cid):
    print("importing", flush=True)
    time.sleep(600)

import_bundle(Store(home / "latentfuzz.duckdb"), home, Path(sys.argv[2]), in_transaction=hold)
"""


def staging_folders(home: Path) -> list[Path]:
    return sorted((home / "campaigns").glob(".import-*"))


def test_a_killed_imports_staging_is_removed_by_the_next(source, honest, tmp_path):
    _, cid = source
    home = tmp_path / "home"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(home), str(honest)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(Path.cwd())},
    )
    try:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(child.stdout.readline()))
        reader.start()
        reader.join(timeout=180)
        assert line == ["importing\n"], "the child import never reached its transaction"
        live = staging_folders(home)
        assert len(live) == 1
        assert bundle_zip.clean_staging(home / "campaigns") == []  # its owner is alive
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(timeout=60)
        child.stdout.close()
    assert staging_folders(home) == live  # what a kill leaves (doctor flagged it)
    # A folder of a latentfuzz that kept no owner file: removed once old, kept while new.
    old, new = home / "campaigns" / ".import-old", home / "campaigns" / ".import-new"
    old.mkdir()
    new.mkdir()
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    assert import_bundle(db(home), home, honest) == cid
    assert staging_folders(home) == [new]
    new.rmdir()
    assert [f for f in check(db(home), home) if f.kind == "orphan-folder"] == []
