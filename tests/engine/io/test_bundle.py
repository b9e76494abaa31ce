"""Campaign bundles: export then import gives the same rows and image bytes; tampered,
duplicate and newer bundles are refused; an older one is migrated."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import duckdb
import pytest

from engine.core.errors import ConfigError
from engine.core.files import sha256
from engine.io.bundle import BundleError, export_bundle, import_bundle
from store import SCHEMA_VERSION, Store
from store import campaigns as sc
from store.bundles import TABLES


def db(home: Path) -> Store:
    return Store(home / "latentfuzz.duckdb")


def rows(store: Store, cid: str, drop_id: bool = False, was: str = "") -> dict[str, list[tuple]]:
    """Every table's rows of the campaign, all columns, in key order; drop_id: the id
    masked wherever it appears (and `was`, the id a copy was made from, which its name
    keeps)."""
    out = {}
    with store.read() as con:
        for table, where in TABLES.items():
            df = con.execute(f"SELECT * FROM {table} WHERE {where} ORDER BY ALL", [cid]).df()
            if drop_id:
                for col in ("id", "campaign_id", "dir"):
                    if col in df:
                        df[col] = "ID"
                for i in filter(None, (cid, was)):
                    df = df.map(lambda v, i=i: v.replace(i, "ID") if isinstance(v, str) else v)
            out[table] = [tuple(map(repr, r)) for r in df.itertuples(index=False)]
    return out


def image_bytes(home: Path, cid: str) -> dict[str, bytes]:
    folder = home / "campaigns" / cid
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.png"))}


def test_round_trip_gives_identical_rows_and_images(source, tmp_path: Path):
    home, cid = source
    bundle = tmp_path / "c.lfz"
    manifest = export_bundle(db(home), home, cid, bundle)
    assert manifest["schema_version"] == SCHEMA_VERSION and manifest["campaign_id"] == cid
    assert manifest["rows"]["archive"] > 0 and manifest["rows"]["annotations"] == 1
    fresh = tmp_path / "fresh"
    assert import_bundle(db(fresh), fresh, bundle) == cid
    want = rows(db(home), cid)
    assert all(want[t] for t in ("campaigns", "seeds", "generations", "individuals", "images"))
    assert rows(db(fresh), cid) == want
    assert image_bytes(fresh, cid) == image_bytes(home, cid) != {}
    # Twice: refused, and nothing changed.
    with pytest.raises(BundleError, match=f"campaign {cid} is already in .*--as NEW_ID"):
        import_bundle(db(fresh), fresh, bundle)
    assert rows(db(fresh), cid) == want
    # --as: a copy under a new id, the same rows but for the id, paths under its folder.
    assert import_bundle(db(fresh), fresh, bundle, "copy-1") == "copy-1"
    assert rows(db(fresh), "copy-1", True, cid) == rows(db(home), cid, drop_id=True)
    assert image_bytes(fresh, "copy-1") == image_bytes(home, cid)
    seeds = db(fresh).query("SELECT result_image FROM seeds WHERE campaign_id = 'copy-1'")
    assert seeds["result_image"].dropna().str.startswith("campaigns/copy-1/").all()
    # A campaign named by its id is named by its new one (its page was titled with the old).
    with db(fresh).write() as con:
        con.execute("UPDATE campaigns SET name = id")
    export_bundle(db(fresh), fresh, "copy-1", tmp_path / "named.lfz")
    assert import_bundle(db(fresh), fresh, tmp_path / "named.lfz", "copy-2") == "copy-2"
    assert sc.campaign(db(fresh), "copy-2")["name"] == "copy-2"
    # Under a taken --as: the advice is another --as; a bad one keeps the bundle's id.
    with pytest.raises(BundleError, match="already in .*; choose another --as$"):
        import_bundle(db(fresh), fresh, bundle, "copy-1")
    with pytest.raises(ConfigError, match="leave --as out to keep the bundle's id"):
        import_bundle(db(fresh), fresh, bundle, "bad id/../x")


def _rewrite(bundle: Path, out: Path, change) -> None:
    """A copy of `bundle` whose members `change(name, data)` alters (None drops one)."""
    with zipfile.ZipFile(bundle) as zin, zipfile.ZipFile(out, "w") as zout:
        for name in zin.namelist():
            data = change(name, zin.read(name))
            if data is not None:
                zout.writestr(name, data)


def test_tampered_missing_and_extra_files_are_refused(source, tmp_path: Path):
    home, cid = source
    bundle = tmp_path / "c.lfz"
    export_bundle(db(home), home, cid, bundle)
    png = next(n for n in zipfile.ZipFile(bundle).namelist() if n.endswith("result.png"))
    cases = {
        # Same length (a longer one is refused by the manifest's sizes, before inflating).
        "tampered": (lambda n, d: d[:-1] + b"x" if n == png else d, "does not match its sha256"),
        "missing": (lambda n, d: None if n == png else d, "lacks .*which its manifest lists"),
        "table": (
            lambda n, d: d[:-9] + b"123456789" if n == "tables/seeds.parquet" else d,
            "tables/seeds.parquet does not match",
        ),
    }
    for what, (change, msg) in cases.items():
        bad = tmp_path / f"{what}.lfz"
        _rewrite(bundle, bad, change)
        target = tmp_path / what
        with pytest.raises(BundleError, match=msg):
            import_bundle(db(target), target, bad)
        assert db(target).query("SELECT count(*) AS n FROM campaigns")["n"][0] == 0
        assert [p.name for p in (target / "campaigns").iterdir()] == []  # no temp left
    extra = tmp_path / "extra.lfz"
    _rewrite(bundle, extra, lambda n, d: d)
    with zipfile.ZipFile(extra, "a") as zf:
        zf.writestr("files/campaigns/x.png", b"")
    with pytest.raises(BundleError, match="holds files/campaigns/x.png, which its manifest"):
        import_bundle(db(tmp_path / "e"), tmp_path / "e", extra)
    # The CLI says it in one line.
    cmd = ["import", str(tmp_path / "tampered.lfz"), "--home", str(tmp_path / "cli")]
    r = subprocess.run(
        [sys.executable, "-m", "engine.cli.main", *cmd], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "does not match its sha256" in r.stderr


def _with_manifest(bundle: Path, out: Path, edit_tables, edit_manifest) -> None:
    """A bundle re-made with changed tables (Parquet rewritten by DuckDB) and manifest,
    its hashes recomputed: what an older or newer latentfuzz would have written."""
    tmp = out.with_suffix(".d")
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(tmp)
    con = duckdb.connect()
    for table, sql in edit_tables.items():
        p = tmp / "tables" / f"{table}.parquet"
        con.execute(f"COPY ({sql.format(f=p)}) TO '{p}.new' (FORMAT parquet)")
        Path(f"{p}.new").replace(p)
    m = json.loads((tmp / "manifest.json").read_text())
    edit_manifest(m)
    m["files"] = {n: sha256(tmp / n) for n in m["files"]}
    if "sizes" in m:  # (bundles written before sizes were recorded have none)
        m["sizes"] = {n: (tmp / n).stat().st_size for n in m["files"]}
    (tmp / "manifest.json").write_text(json.dumps(m))
    with zipfile.ZipFile(out, "w") as zf:
        for p in sorted(tmp.rglob("*")):
            if p.is_file():
                zf.write(p, str(p.relative_to(tmp)))


def test_an_older_bundle_is_migrated_and_a_newer_refused(source, tmp_path: Path):
    home, cid = source
    bundle = tmp_path / "c.lfz"
    export_bundle(db(home), home, cid, bundle)
    old = tmp_path / "v6.lfz"
    # Schema 6: no classifier-B columns, and seed statuses in the old words.
    _with_manifest(
        bundle,
        old,
        {
            "seeds": "SELECT * EXCLUDE (seed_pred_b, final_pred_b) REPLACE (CASE status WHEN "
            "'misclassified' THEN 'failed' ELSE status END AS status) FROM '{f}'",
            "campaigns": "SELECT * EXCLUDE (classifier_b) FROM '{f}'",
        },
        lambda m: (m.update(schema_version=6), m.pop("sizes")),
    )
    fresh = tmp_path / "fresh"
    import_bundle(db(fresh), fresh, old)
    assert rows(db(fresh), cid) == rows(db(home), cid)  # statuses renamed, columns NULL
    newer = tmp_path / "v99.lfz"
    _with_manifest(bundle, newer, {}, lambda m: m.update(schema_version=SCHEMA_VERSION + 1))
    with pytest.raises(BundleError, match=f"store schema {SCHEMA_VERSION + 1}.*upgrade"):
        import_bundle(db(tmp_path / "n"), tmp_path / "n", newer)


def test_a_failed_import_leaves_neither_rows_nor_files(source, tmp_path: Path):
    home, cid = source
    bundle = tmp_path / "c.lfz"
    export_bundle(db(home), home, cid, bundle)
    target = tmp_path / "t"

    def fail_at_the_end(con, new_id: str) -> None:
        assert con.execute("SELECT count(*) FROM seeds").fetchone()[0] > 0  # rows were in
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError, match="disk gone"):
        import_bundle(db(target), target, bundle, in_transaction=fail_at_the_end)
    for table in TABLES:
        assert db(target).query(f"SELECT count(*) AS n FROM {table}")["n"][0] == 0
    assert list((target / "campaigns").iterdir()) == []
    assert import_bundle(db(target), target, bundle) == cid  # and it imports afterwards
