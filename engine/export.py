"""Export a campaign as a zip: seed/result image pairs named with their metadata, plus CSV."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pandas as pd

from engine.csv_io import to_csv
from engine.errors import LatentfuzzError
from store import Store, queries


def pair_stem(
    seed_idx: int, expected: int, predicted: int, iterations: int, predicted_b: int | None = None
) -> str:
    """The pair's file stem; with a second classifier's answer, both ("A5_B6"): "predicted"
    named A's answer alone."""
    said = f"predicted{predicted}" if predicted_b is None else f"A{predicted}_B{predicted_b}"
    return f"seed{seed_idx:04d}_expected{expected}_{said}_iter{iterations}"


def _write_pairs(zf: zipfile.ZipFile, seeds, home: Path) -> int:
    zf.writestr("seeds.csv", to_csv(seeds))  # formula cells neutralised
    n = 0
    for r in seeds[seeds["result_image"].notna()].itertuples():
        its = -1 if pd.isna(r.iterations) else int(r.iterations)
        b = getattr(r, "final_pred_b", None)
        b = None if pd.isna(b) else int(b)
        stem = pair_stem(int(r.seed_idx), int(r.seed_label), int(r.final_pred), its, b)
        # Two classifiers: a failure is their disagreement, not a misclassification.
        folders = ("misclassified", "survived") if b is None else ("disagree", "agree")
        folder = folders[0] if r.misclassified else folders[1]
        for kind, rel in (("seed", r.seed_image), ("result", r.result_image)):
            if not isinstance(rel, str):  # an imported campaign's tool kept no seed image
                continue
            src = home / rel
            if not src.exists():
                raise LatentfuzzError(f"image {src} is missing; the campaign folder was changed")
            zf.write(src, f"{folder}/{stem}_{kind}.png")
        n += 1
    return n


def _seeds(store: Store, campaign_id: str):
    if queries.campaign(store, campaign_id) is None:
        raise LatentfuzzError(f"no campaign {campaign_id!r}; `latentfuzz campaigns` lists them")
    return queries.seeds(store, campaign_id)


def export_zip(store: Store, home: Path, campaign_id: str, zip_path: Path) -> int:
    """Write the zip; returns the number of image pairs. Writes to a temp file first, so a
    failed export never leaves a partial zip behind."""
    seeds = _seeds(store, campaign_id)
    zip_path = Path(zip_path)
    if zip_path.is_dir():
        raise LatentfuzzError(f"{zip_path} is a folder; give the zip's file path, such as "
                              f"{zip_path / campaign_id}.zip")  # fmt: skip
    if not zip_path.parent.is_dir():
        raise LatentfuzzError(f"folder {zip_path.parent} does not exist; create it, or give a "
                              "zip path in a folder that exists")  # fmt: skip
    tmp = zip_path.with_name(zip_path.name + ".part")
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            n = _write_pairs(zf, seeds, home)
        tmp.replace(zip_path)
    finally:
        tmp.unlink(missing_ok=True)  # (it stood beside a folder given as the zip)
    return n


def zip_bytes(store: Store, home: Path, campaign_id: str) -> bytes:
    """The same zip, in memory (the dashboard's download button)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        _write_pairs(zf, _seeds(store, campaign_id), home)
    return buf.getvalue()
