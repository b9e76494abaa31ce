"""dashboard/compare.py's ``with_auto`` and dashboard/compare_table.py's columns of
automatic validity and realism table: how each filter decided, in its column's title where
a block's campaigns share it, else in each cell; blanks, never "None" or "nan"."""

from __future__ import annotations

import re

import pandas as pd

from dashboard.compare import auto_column, significance, with_auto
from dashboard.compare_table import markdown_table, realism_markdown
from tests.dashboard.test_compare import table

AUTO = pd.DataFrame(
    {
        "campaign_id": ["a", "b", "b"],
        "validator": ["ssim-nearest", "ssim-nearest", "discriminator"],
        "images": [10, 19, 19],
        "valid": [4, 19, 7],
        "valid_pct": [40.0, 100.0, 100 * 7 / 19],
        "threshold": [0.519, 0.4, 0.3],
        "study": ["study-x", None, None],
    }
)


def test_each_filter_gets_a_column_beside_people_s_and_says_how_it_decided():
    t, its = table()  # one block: A, B, C
    t = with_auto(t, AUTO, ["ssim-nearest", "discriminator"])
    assert t.attrs["auto"] == ["ssim-nearest", "discriminator"]
    study = t[auto_column("ssim-nearest", "study")]
    assert study[0] == "study-x" and study[1:].isna().all()
    md = markdown_table(t, significance(t, its))
    # A's study and B's fixed threshold differ: each cell says which.
    assert (
        "| % validity (#) | ssim-nearest: % valid (auto) (#) "
        "| discriminator: % valid (auto, threshold 0.3) (#) | % label preservation (#) |"
    ) in md.replace("\\", "")
    rows = {x[:3]: x for x in md.splitlines() if x[:3] in ("| A", "| B", "| C")}
    assert "| **100** (10) | 40 (4), calibrated on study\\-x | – |" in rows["| A"]
    assert "| 26 (5) | 100 (19), threshold 0\\.4 | 37 (7) |" in rows["| B"]
    assert "| – | – | – | – |" in rows["| C"]  # no study, no filter: blanks
    assert not re.search(r"\bNone\b|\bnan\b", md)
    # Every row has the same number of cells as its header.
    head = next(x for x in md.splitlines() if x.startswith("| campaign"))
    assert all(r.count(" | ") == head.count(" | ") for r in rows.values())


def test_no_filter_leaves_the_icst_table_as_it_was():
    t, its = table()
    assert markdown_table(with_auto(t, AUTO.iloc[:0], []), significance(t, its)) == (
        markdown_table(t, significance(t, its))
    )


def test_realism_rows_follow_the_table_with_blanks_where_none_is_stored():
    t, _ = table()
    t["status"] = ["finished", "finished", "running"]
    realism = pd.DataFrame(
        {
            "campaign_id": ["b", "a"],
            "generator": ["gan", "vae"],
            "fid": [1234.56, None],  # too few images: undefined
            "kid": [-4.321, None],
            "kid_sd": [2.0, None],
            "images": [19, 1],
            "reference_images": [1000, 1000],
            "features": ["penultimate of mnist-convnet"] * 2,
        }
    )
    md = realism_markdown(realism, t).splitlines()
    assert md[0].startswith(
        "| campaign | generator | FID (classifier features, not Inception) "
        "| KID (classifier features, not Inception) |"
    )
    assert md[2:] == [
        "| A | vae | n/a | n/a | n/a | 1 | 1,000 |",
        "| B | gan | 1,234.6 | -4.32 | 2.00 | 19 | 1,000 |",
        "| C *(running)* | dm | – | – | – | – | – |",
    ]
