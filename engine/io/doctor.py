"""`latentfuzz doctor`: the store's integrity checks and what a crash or a hand can leave.

Checks: the store file opens (done by Store) and no campaign table holds two rows with one
key; dead campaigns (`running` with no live process) and crashed ones; campaign folders
without a campaign row (orphans); images the store names that are missing on disk; strip
frames that generation rows point to beyond the end of their strip; recovery folders not
yet written; finished campaigns without their metrics row. A crashed or interrupted
campaign's missing files are reported with the advice to resume it, as `resume` rewrites
them. ``fix`` does only the safe repairs: mark dead campaigns crashed, write recovery
folders, move orphan folders to ``<home>/orphans/``, and recompute missing metrics by
replaying the campaign's search against its rows (engine/campaign/resume.py), closed by
the campaign close's own code.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from engine.core.errors import LatentfuzzError
from engine.core.images import frame_count
from engine.io.bundle_zip import STAGING_PREFIX, clean_staging, stale_staging
from store import Store, StoreBusy, StoreError, liveness, recovery
from store import campaigns as sc
from store import maintenance as sm
from store import metrics as smx
from store.schema import KEYS, UNINDEXED

#: How `fix` begins a line for a repair it tried and could not make.
NOT_FIXED = "not fixed: "


@dataclass(frozen=True)
class Finding:
    kind: str  # duplicate-keys | crashed | orphan-folder | stale-import | missing-images | ...
    campaign: str | None
    detail: str


def _width(path: Path) -> int | None:
    try:
        with Image.open(path) as im:  # reads the header only
            return im.width
    except OSError:
        return None


def _files(store: Store, home: Path, cid: str) -> tuple[list[str], int]:
    """(missing image paths, generation rows whose strip frame is beyond the strip's end)."""
    s = sc.seeds(store, cid)
    paths = [
        p
        for col in ("seed_image", "result_image", "improvements_image")
        for p in s[col].dropna().tolist()
    ]
    missing = sorted({p for p in paths if not (home / p).is_file()})
    g = sc.strip_frames(store, cid)
    seed_img = dict(zip(s["seed_idx"], s["seed_image"], strict=True))
    dangling = 0
    for r in g.itertuples():
        frame = _width(home / seed_img[r.seed_idx]) if seed_img.get(r.seed_idx) else None
        # A crashed seed's frames are still in the strip's sidecar (engine/core/images.py).
        n = frame_count(home / r.image, frame) if frame else None
        if n is None or int(r.last) + 1 > n:
            dangling += 1
    return missing, dangling


def check(store: Store, home: Path) -> list[Finding]:
    """Every anomaly of the store and the home, in a stable order."""
    out: list[Finding] = []
    for table in KEYS:
        n = sm.duplicated_keys(store, table)
        if n:
            out.append(Finding("duplicate-keys", None, f"{table}: {n} keys appear twice"))
    # The store's own damage, for the commands that write campaigns: they refuse a
    # damaged store, and check a large one through this record (store/maintenance.py).
    sm.record_damage(store, [f.detail for f in out])
    for folder in recovery.pending(home):
        out.append(Finding("recovery", None, f"{folder} holds rows not yet written"))
    for cid in smx.missing_metrics(store):
        if not liveness.alive(home, cid):  # not being mended now
            out.append(
                Finding(
                    "missing-metrics",
                    cid,
                    "finished without its metrics row; `latentfuzz doctor --fix` recomputes "
                    "them (a replay of its search, with its models)",
                )
            )
    camps = sc.list_campaigns(store)
    for r in camps.itertuples():
        status = liveness.status(home, r.id, r.status)
        if status == "running":
            continue  # its files are being written
        missing, dangling = _files(store, home, r.id)
        files = ", ".join(
            x
            for x in (
                f"{len(missing)} missing images" if missing else "",
                f"{dangling} strips short of their frames" if dangling else "",
            )
            if x
        )
        if status in liveness.RESUMABLE:
            if status == "crashed":
                dead = " (its process is gone; marked by --fix)" if r.status == "running" else ""
                detail = f"crashed{dead}; `latentfuzz resume {r.id}` continues it"
                out.append(
                    Finding("crashed", r.id, detail + (f", rewriting {files}" * bool(files)))
                )
            elif files:  # interrupted: no finding of its own, but its files are still checked
                kind = "missing-images" if missing else "dangling-frames"
                out.append(
                    Finding(
                        kind,
                        r.id,
                        f"interrupted with {files}; `latentfuzz resume {r.id}` rewrites them",
                    )
                )
            continue
        if missing:
            out.append(
                Finding("missing-images", r.id, f"{len(missing)} missing, e.g. {missing[0]}")
            )
        if dangling:
            out.append(
                Finding(
                    "dangling-frames",
                    r.id,
                    f"{dangling} generation rows point past the end of their strip",
                )
            )
    known = set(camps["id"])
    root = home / "campaigns"
    for folder in stale_staging(root):
        out.append(
            Finding(
                "stale-import",
                folder.name,
                f"{folder} was left by a killed import (removed by --fix)",
            )
        )
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if _orphan(home, folder, known):
            out.append(
                Finding(
                    "orphan-folder",
                    folder.name,
                    f"{folder} has no campaign row (moved to orphans/ by --fix)",
                )
            )
    return out


def _orphan(home: Path, folder: Path, known: set[str]) -> bool:
    """A campaign folder without a campaign row, whose campaign is not starting; an
    import's staging folder is not one (a live import's is its own, a dead one's is
    named `stale-import`)."""
    if folder.name.startswith(STAGING_PREFIX) or not folder.is_dir():
        return False
    return folder.name not in known and not liveness.alive(home, folder.name)


def _mend_metrics(store: Store, home: Path) -> list[str]:
    """Recompute the metrics of finished campaigns that lack them; a campaign that cannot
    be replayed (its models changed or are gone) keeps its finding, with the reason."""
    # Deferred (start-up time: the replay loads torch and the campaign's models).
    from engine.campaign.resume import recompute_metrics

    done = []
    for cid in smx.missing_metrics(store):
        if liveness.alive(home, cid):
            continue
        try:
            recompute_metrics(home, cid)
        except (LatentfuzzError, StoreError, StoreBusy) as e:
            done.append(f"{NOT_FIXED}the metrics of {cid}: {e}")
            continue
        done.append(f"recomputed the metrics of {cid} (replayed against its rows)")
    return done


def fix(store: Store, home: Path) -> list[str]:
    """The safe repairs; returns what was done, one line each."""
    done = [f"wrote the recovery rows of {c}" for c in recovery.ingest(store, timeout=30)]
    for table in sorted(UNINDEXED):
        # No index refuses a second copy of a row here (store/schema.py): a copy is
        # dropped, the first row of each key kept, as the indexed tables would have. A
        # read-only or busy store keeps it, and `check` goes on naming it.
        if not store.writable or not sm.duplicate_rows(store, table):
            continue
        with contextlib.suppress(StoreBusy), store.write(timeout=30) as con:
            n = sm.drop_duplicate_rows(con, table)
            done.append(f"dropped {n} duplicated {table} rows")
    done += [f"marked {c} crashed" for c in sc.reap(store, timeout=30)]
    if store.writable:
        done += _mend_metrics(store, home)
    known = set(sc.list_campaigns(store)["id"])
    root = home / "campaigns"
    done += [f"removed {f}, left by a killed import" for f in clean_staging(root)]
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if _orphan(home, folder, known):
            dest = home / "orphans" / folder.name
            dest.parent.mkdir(exist_ok=True)
            shutil.move(str(folder), str(dest))
            done.append(f"moved {folder} to {dest}")
    return done
