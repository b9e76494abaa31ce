"""Rows a campaign could not write before the user gave up waiting: a recovery folder that
the next start ingests.

The final write waits for the store as long as it must (CONTRACT rule 4). If the user
interrupts that wait, the pending rows and the campaign's closing update are saved as
Parquet files plus one JSON file in ``<home>/recovery/<campaign>-<n>/``, written to a
temporary name and renamed, so a folder is either whole or absent. ``ingest`` writes every
such folder in one transaction each and removes it; it runs when a campaign starts and
whenever the CLI or the dashboard opens the store for writing.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from store.connection import Store
from store.errors import StoreBusy
from store.schema import OLD_SEED_STATUSES
from store.tables import apply_seed_updates, insert_table

if TYPE_CHECKING:
    import pyarrow as pa

FOLDER = "recovery"


def save(
    home: Path,
    campaign_id: str,
    tables: dict[str, pa.Table],
    seed_updates: pa.Table | None,
    campaign: dict[str, Any],
) -> Path:
    """Write a recovery folder; returns its path."""
    # Deferred (start-up time: pyarrow is 0.1 s that a campaign with no folder never needs).
    import pyarrow.parquet as pq

    root = Path(home) / FOLDER
    root.mkdir(parents=True, exist_ok=True)
    n = len(list(root.glob(f"{campaign_id}-*")))
    final = root / f"{campaign_id}-{n:03d}"
    tmp = root / f".{final.name}.part"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    for name, table in tables.items():
        pq.write_table(table, tmp / f"{name}.parquet")
    if seed_updates is not None:
        pq.write_table(seed_updates, tmp / "seed_updates.parquet")
    fields = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in campaign.items()}
    meta = {"campaign_id": campaign_id, "campaign": fields}
    (tmp / "campaign.json").write_text(json.dumps(meta))
    for f in tmp.iterdir():  # durable before the rename makes the folder visible
        with open(f, "rb") as fh:
            os.fsync(fh.fileno())
    tmp.rename(final)
    return final


def pending(home: Path) -> list[Path]:
    root = Path(home) / FOLDER
    return sorted(p for p in root.glob("*") if p.is_dir() and not p.name.startswith("."))


def ingest(store: Store, timeout: float = 1.0) -> list[str]:
    """Write every recovery folder of this store's home into it; returns the campaign ids.
    A busy or read-only store leaves them for the next start."""
    if store.memory or not store.writable:
        return []
    done = []
    folders = pending(Path(store.path).parent)
    if not folders:
        return done
    # Deferred (start-up time: pyarrow is 0.1 s that a campaign with no folder never needs).
    import pyarrow.parquet as pq

    for folder in folders:
        meta = json.loads((folder / "campaign.json").read_text())
        cid, fields = meta["campaign_id"], meta["campaign"]
        with contextlib.suppress(StoreBusy), store.write(timeout=timeout, checkpoint=True) as con:
            for f in sorted(folder.glob("*.parquet")):
                if f.stem != "seed_updates":
                    insert_table(con, f.stem, pq.read_table(f), cid)
            if (folder / "seed_updates.parquet").exists():
                apply_seed_updates(con, pq.read_table(folder / "seed_updates.parquet"), cid)
            # A folder an older version saved speaks its seed statuses ('failed').
            for old, new in OLD_SEED_STATUSES.items():
                con.execute(
                    "UPDATE seeds SET status = ? WHERE campaign_id = ? AND status = ?",
                    [new, cid, old],
                )
            if fields.get("status") in ("interrupted", "failed"):
                con.execute(
                    "UPDATE seeds SET status = 'interrupted' WHERE campaign_id = ? "
                    "AND status = 'searching'",
                    [cid],
                )
            if fields:
                sets = ", ".join(f"{k} = ?" for k in fields)
                con.execute(f"UPDATE campaigns SET {sets} WHERE id = ?", [*fields.values(), cid])
            done.append(cid)
        if done and done[-1] == cid:
            shutil.rmtree(folder)
    return done
