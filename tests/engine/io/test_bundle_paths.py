"""Bundles from elsewhere name no file outside their campaign's folder: a path column
holding an absolute path, `..` or a way through a symlink is refused on import, and
`export --zip` / `export --bundle` refuse such a path already in a store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.core.errors import LatentfuzzError
from engine.io.bundle import export_bundle, import_bundle
from engine.io.export import check_zip, export_zip, zip_bytes
from store import campaigns as sc
from store.bundles import TABLES
from tests.engine.io.test_bundle import _with_manifest, db

#: (column, value) an attacker writes into the first seed's row, with the file it reads.
OUTSIDE = {
    "absolute": ("result_image", "/etc/passwd"),
    "dotdot": ("seed_image", "../../../../../../../../etc/hostname"),
    # Starts with the campaign's own folder, as export's and --as's string checks ask.
    "symlink": ("result_image", "campaigns/{cid}/../escape/passwd"),
}


def assert_nothing_left(target: Path) -> None:
    """A refused import left no row, no campaign folder and no staging folder."""
    for table in TABLES:
        assert db(target).query(f"SELECT count(*) AS n FROM {table}")["n"][0] == 0, table
    left = {p.name for p in (target / "campaigns").iterdir()} - {"escape"}  # (the test's link)
    assert left == set()
    assert {p.name for p in target.iterdir()} <= {
        "campaigns",
        "latentfuzz.duckdb",
        "latentfuzz.duckdb.lock",
    }


def _seed_path(bundle: Path, out: Path, col: str, value: str) -> None:
    sql = f"SELECT * REPLACE (CASE WHEN seed_idx = 0 THEN '{value}' ELSE {col} END AS {col}) "
    _with_manifest(bundle, out, {"seeds": sql + "FROM '{f}'"}, lambda m: None)


@pytest.mark.parametrize("kind", sorted(OUTSIDE))
def test_a_bundle_naming_a_file_outside_is_refused(source, tmp_path: Path, kind: str):
    home, cid = source
    bundle = tmp_path / "c.lfz"
    export_bundle(db(home), home, cid, bundle)
    col, value = OUTSIDE[kind]
    value = value.format(cid=cid)
    bad = tmp_path / "bad.lfz"
    _seed_path(bundle, bad, col, value)
    target = tmp_path / "target"
    (target / "campaigns").mkdir(parents=True)
    (target / "campaigns" / "escape").symlink_to("/etc")  # a way out, already in the home
    for new_id in (None, "copy"):
        with pytest.raises(LatentfuzzError, match=rf"seeds\.{col} in .*bad\.lfz is .*outside"):
            import_bundle(db(target), target, bad, new_id)
        assert_nothing_left(target)
    if kind != "absolute":
        return
    # The CLI says it in one line (once: each call starts an interpreter).
    r = subprocess.run(
        [sys.executable, "-m", "engine.cli.main", "import", str(bad), "--home", str(target)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"seeds.{col}" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert_nothing_left(target)


def _stored_outside(home: Path, cid: str, kind: str) -> None:
    """What a store imported before the check holds: a row naming a file outside."""
    col, value = OUTSIDE[kind]
    if kind == "symlink":  # the campaign's own image, replaced by a link out of the home
        value = db(home).query(
            f"SELECT {col} FROM seeds WHERE campaign_id = '{cid}' AND seed_idx = 0"
        )[col][0]
        link = home / value
        link.unlink()
        link.symlink_to("/etc/passwd")
    with db(home).write() as con:
        con.execute(
            f"UPDATE seeds SET {col} = ? WHERE campaign_id = ? AND seed_idx = 0", [value, cid]
        )


@pytest.mark.parametrize("kind", sorted(OUTSIDE))
def test_export_refuses_a_stored_path_outside(source, tmp_path: Path, kind: str):
    src, cid = source
    bundle = tmp_path / "c.lfz"
    export_bundle(db(src), src, cid, bundle)
    home = tmp_path / "home"
    import_bundle(db(home), home, bundle)
    _stored_outside(home, cid, kind)
    col = OUTSIDE[kind][0]
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(LatentfuzzError, match=f"names {col} .*outside the home"):
        export_zip(db(home), home, cid, out / "c.zip")
    with pytest.raises(LatentfuzzError, match=f"names {col} .*outside the home"):
        zip_bytes(db(home), home, cid)  # the dashboard's download
    with pytest.raises(LatentfuzzError, match=f"names {col} .*outside the home"):
        check_zip(home, sc.seeds(db(home), cid))  # said beside its button, before a click
    with pytest.raises(LatentfuzzError, match=rf"seeds\.{col}.* is .*outside"):
        export_bundle(db(home), home, cid, out / "c.lfz")
    assert list(out.iterdir()) == []  # neither a zip, a bundle nor a part of one
    if kind != "absolute":
        return
    # The CLI: one line, nothing written (once: each call starts an interpreter).
    for flag in ("--zip", "--bundle"):
        r = subprocess.run(
            [sys.executable, "-m", "engine.cli.main", "export", cid, flag, str(out / "x")]
            + ["--home", str(home)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert "outside" in r.stderr
    assert list(out.iterdir()) == []
