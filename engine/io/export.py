"""Export a campaign as a zip: seed/result image pairs (and improvement strips) named with
their metadata, plus a CSV that names them."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pandas as pd

from engine.core.csv_io import to_csv
from engine.core.errors import LatentfuzzError
from engine.core.untrusted import UntrustedFileError, inside, quote
from store import Store
from store import campaigns as sc


def pair_stem(
    seed_idx: int, expected: int, predicted: int, iterations: int, predicted_b: int | None = None
) -> str:
    """The pair's file stem; with a second classifier's answer, both ("A5_B6"): "predicted"
    named A's answer alone."""
    said = f"predicted{predicted}" if predicted_b is None else f"A{predicted}_B{predicted_b}"
    return f"seed{seed_idx:04d}_expected{expected}_{said}_iter{iterations}"


IMAGE_COLUMNS = {
    "seed": "seed_image",
    "result": "result_image",
    "improvements": "improvements_image",
}


def _write_pairs(zf: zipfile.ZipFile, seeds, home: Path) -> int:
    """Each searched seed's images under a name that says what happened to it, the seed
    image of every other seed (still searching, stopped, not viable) under its status, and
    seeds.csv whose image columns name those files in the zip (a home's paths mean nothing
    outside it; empty where the zip has no such image)."""
    table = seeds.copy()
    for col in IMAGE_COLUMNS.values():
        table[col] = None
    _write_seed_images(zf, seeds, home, table)
    pairs = set()
    for i, col, src, name in _pair_files(seeds, home):
        table.at[i, col] = name
        zf.write(src, name)
        pairs.add(i)
    zf.writestr("seeds.csv", to_csv(table))  # formula cells neutralised
    return len(pairs)


def _pair_files(seeds, home: Path):
    """(row, column, stored file, name in the zip) of each searched seed's images. Raises
    where a seed or result image is missing or lies outside the home; a missing strip is
    left out (a strip is extra)."""
    for i, r in seeds[seeds["result_image"].notna()].iterrows():
        its = -1 if pd.isna(r.iterations) else int(r.iterations)
        b = r.get("final_pred_b")
        b = None if pd.isna(b) else int(b)
        stem = pair_stem(int(r.seed_idx), int(r.seed_label), int(r.final_pred), its, b)
        # Two classifiers: a failure is their disagreement, not a misclassification.
        folders = ("misclassified", "survived") if b is None else ("disagree", "agree")
        folder = folders[0] if r.misclassified else folders[1]
        for kind, col in IMAGE_COLUMNS.items():
            rel = r[col]
            if not isinstance(rel, str):  # an imported campaign's tool kept no seed image
                continue
            src = _stored_image(home, r, col, rel)
            if not src.exists():
                if kind == "improvements":
                    continue
                raise LatentfuzzError(f"image {src} is missing; the campaign folder was changed")
            yield i, col, src, f"{folder}/{stem}_{kind}.png"


def check_zip(home: Path, seeds) -> None:
    """Raise what `zip_bytes` would raise for these seed rows, without reading an image:
    the dashboard says it beside the button and makes the zip only on its click."""
    for _ in _pair_files(seeds, home):
        pass


def _write_seed_images(zf: zipfile.ZipFile, seeds, home: Path, table) -> None:
    """The seed images of seeds without a result (yet): a running campaign's zip held
    seeds.csv alone, while every seed image is written at its start. One missing (a
    campaign folder changed by hand) is left out, its cell empty."""
    for i, r in seeds[seeds["result_image"].isna()].iterrows():
        rel = r["seed_image"]
        if not isinstance(rel, str):
            continue
        src = _stored_image(home, r, "seed_image", rel)
        if not src.is_file():
            continue
        stem = f"seed{int(r.seed_idx):04d}_expected{int(r.seed_label)}"
        # (A running campaign's "misclassified so far": a folder name without spaces.)
        folder = str(r["status"]).replace(" ", "_")
        table.at[i, "seed_image"] = f"{folder}/{stem}_seed.png"
        zf.write(src, table.at[i, "seed_image"])


def _stored_image(home: Path, row, col: str, rel: str) -> Path:
    """The image file a seed row names, when it lies inside the home. A store may hold
    rows imported before bundles' paths were checked: one naming /etc/passwd is refused,
    not packed (the dashboard's download shows the refusal instead)."""
    try:
        return inside(home, home / rel, f"seeds.{col}")
    except UntrustedFileError:
        cid = row.get("campaign_id", "?")
        raise UntrustedFileError(
            f"seed {row.seed_idx} of campaign {cid} names {col} {quote(rel)}, outside the "
            f"home {home}; not exported: `latentfuzz delete {cid}`, then import its bundle "
            "again (imports now refuse such paths)"
        ) from None


def _seeds(store: Store, campaign_id: str):
    if sc.campaign(store, campaign_id) is None:
        raise LatentfuzzError(f"no campaign {campaign_id!r}; `latentfuzz campaigns` lists them")
    return sc.seeds(store, campaign_id)


def export_zip(store: Store, home: Path, campaign_id: str, zip_path: Path) -> int:
    """Write the zip; returns the number of image pairs. Writes to a temp file first, so a
    failed export never leaves a partial zip behind."""
    seeds = _seeds(store, campaign_id)
    zip_path = Path(zip_path)
    if zip_path.is_dir():
        raise LatentfuzzError(
            f"{zip_path} is a folder; give the zip's file path, such as "
            f"{zip_path / campaign_id}.zip"
        )
    if not zip_path.parent.is_dir():
        raise LatentfuzzError(
            f"folder {zip_path.parent} does not exist; create it, or give a "
            "zip path in a folder that exists"
        )
    tmp = zip_path.with_name(zip_path.name + ".part")
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            n = _write_pairs(zf, seeds, home)
        tmp.replace(zip_path)
    finally:
        tmp.unlink(missing_ok=True)  # (it stood beside a folder given as the zip)
    return n


def zip_bytes(
    store: Store, home: Path, campaign_id: str, seeds: pd.DataFrame | None = None
) -> bytes:
    """The same zip, in memory (the dashboard's download button). `seeds`: the rows the
    page shows and offers as its CSV (with the columns it adds, such as the generations
    each seed searched), so that the zip's seeds.csv has the same columns; default the
    stored rows."""
    rows = _seeds(store, campaign_id) if seeds is None else seeds
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        _write_pairs(zf, rows, home)
    return buf.getvalue()
