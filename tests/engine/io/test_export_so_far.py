"""engine/io/export.py: the zip of a campaign still running holds every seed image written
so far, under its seed's status, and refuses a stored seed-image path outside the home as
it refuses a result image's (issue 36, point 1)."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from engine.core.errors import LatentfuzzError
from engine.io.export import export_zip, zip_bytes
from store import campaigns as sc
from tests.engine.io.conftest import db


@pytest.fixture
def searching(source, tmp_path: Path) -> tuple[Path, str]:
    """A copy of `source` whose seeds are all still searching (no result written)."""
    home = tmp_path / "home"
    shutil.copytree(source[0], home)
    cid = source[1]
    with db(home).write() as con:
        con.execute(
            "UPDATE seeds SET status = 'searching', misclassified = NULL, final_pred = NULL, "
            "iterations = NULL, result_image = NULL, improvements_image = NULL "
            "WHERE campaign_id = ? AND viable",
            [cid],
        )
    return home, cid


def test_a_running_campaigns_zip_holds_its_seed_images(searching, tmp_path: Path):
    home, cid = searching
    seeds = sc.seeds(db(home), cid)
    z = zipfile.ZipFile(io.BytesIO(zip_bytes(db(home), home, cid)))
    table = pd.read_csv(z.open("seeds.csv"))
    want = [
        f"{s}/seed{i:04d}_expected{y}_seed.png"
        for i, y, s in zip(seeds["seed_idx"], seeds["seed_label"], seeds["status"], strict=True)
    ]
    assert table["seed_image"].tolist() == want
    assert sorted(z.namelist()) == sorted([*want, "seeds.csv"])
    # The same bytes as the stored seed image.
    first = seeds.iloc[0]
    assert z.read(want[0]) == (home / first["seed_image"]).read_bytes()
    # The CLI's zip too: no image pair yet, the seed images all the same.
    assert export_zip(db(home), home, cid, tmp_path / "c.zip") == 0
    assert len(zipfile.ZipFile(tmp_path / "c.zip").namelist()) == len(want) + 1


def test_a_missing_seed_image_is_left_out_and_one_outside_the_home_refused(
    searching, tmp_path: Path
):
    home, cid = searching
    seeds = sc.seeds(db(home), cid)
    (home / seeds.iloc[0]["seed_image"]).unlink()  # a campaign folder changed by hand
    with zipfile.ZipFile(io.BytesIO(zip_bytes(db(home), home, cid))) as z:
        table = pd.read_csv(z.open("seeds.csv"))
    assert pd.isna(table["seed_image"].iloc[0]) and table["seed_image"].iloc[1:].notna().all()
    # A row as a crafted bundle could have left before imports checked paths.
    (tmp_path / "secret.txt").write_text("not yours")
    with db(home).write() as con:
        con.execute(
            "UPDATE seeds SET seed_image = ? WHERE campaign_id = ? AND seed_idx = 1",
            [str(tmp_path / "secret.txt"), cid],
        )
    with pytest.raises(LatentfuzzError, match="names seed_image .*outside the home"):
        zip_bytes(db(home), home, cid)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(LatentfuzzError, match="names seed_image .*outside the home"):
        export_zip(db(home), home, cid, out / "c.zip")
    assert list(out.iterdir()) == []  # no zip, no part of one
