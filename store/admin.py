"""Deleting and renaming a campaign: the store's side (one transaction each).

The campaign's folder goes after its rows: a crash in between leaves an orphan folder,
which `latentfuzz doctor --fix` moves away, never rows that point at missing files.
"""

from __future__ import annotations

import glob
import shutil
from pathlib import Path

from store.annotations import forget
from store.connection import Store, StoreError
from store.liveness import alive

CAMPAIGN_TABLES = (
    "individuals",
    "generations",
    "images",
    "seeds",
    "archive",
    "validity",
    "campaign_metrics",
    "grid_cells",
)

#: A campaign's search-state checkpoint (engine/campaign/checkpoint.py) and its temp file:
#: in the campaign's folder, so `delete` removes it with the folder; never in a bundle.
CHECKPOINT_FILES = ("checkpoint.pt", "checkpoint.pt.tmp")


def checkpoint_path(home: Path, cid: str) -> Path:
    return Path(home) / "campaigns" / cid / CHECKPOINT_FILES[0]


def validity_studies_using(store: Store, cid: str) -> list[str]:
    """Label studies that show this campaign's images."""
    df = store.query(
        "SELECT DISTINCT study_id FROM label_items WHERE campaign_id = ? ORDER BY 1", [cid]
    )
    return df["study_id"].tolist()


def delete_campaign(store: Store, home: Path, cid: str) -> dict[str, int]:
    """Remove a campaign's rows and its folder. Refused while it runs or while a label
    study shows its images (StoreError, one line). Returns what went, for the message that
    says so: {"rows": rows deleted, "files": files removed, "bytes": their size}."""
    if alive(home, cid):
        raise StoreError(f"campaign {cid} is running; stop it first, then delete it")
    used = validity_studies_using(store, cid)
    if used:
        raise StoreError(
            f"campaign {cid} has images in label studies {', '.join(used)}; deleting it would "
            "break them, so it is kept"
        )
    rows = 0
    with store.write(checkpoint=True) as con:
        for table in CAMPAIGN_TABLES:
            rows += con.execute(f"DELETE FROM {table} WHERE campaign_id = ?", [cid]).fetchone()[0]
        rows += con.execute("DELETE FROM campaigns WHERE id = ?", [cid]).fetchone()[0]
        forget(con, "campaign", cid)
    folder = Path(home) / "campaigns" / cid
    files = [f for f in folder.rglob("*") if f.is_file()] if folder.is_dir() else []
    size = sum(f.stat().st_size for f in files)
    if folder.is_dir():
        shutil.rmtree(folder)
    # Its launch log, start-up steps and replay report: left behind, they made its page
    # say "Starting the campaign…" for good.
    for leftover in (Path(home) / "launch").glob(f"{glob.escape(cid)}.*"):
        leftover.unlink(missing_ok=True)
    return {"rows": int(rows), "files": len(files), "bytes": size}


def rename_campaign(store: Store, cid: str, name: str) -> None:
    """Give a campaign a new display name (its id, folder and rows stay)."""
    name = name.strip()
    if not name or len(name) > 200:
        got = "only spaces" if not name else f"{len(name)} characters"
        raise StoreError(
            f"a campaign name needs 1 to 200 characters, not {got}; "
            "give a shorter or a non-empty one"
        )
    with store.write() as con:
        con.execute("UPDATE campaigns SET name = ? WHERE id = ?", [name, cid])
