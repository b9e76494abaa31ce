"""engine/core/ids.py and the seed folder layout (engine/core/home.py): the one form of a
new id, and of a seed's folder, that campaigns, studies and imports share."""

from __future__ import annotations

import re

from engine.core.home import seed_dir
from engine.core.ids import ID_PATTERN, timestamped_id


def test_a_timestamped_id_sorts_by_time_differs_within_a_second_and_is_a_safe_id():
    ids = [timestamped_id("study-") for _ in range(50)]
    assert all(re.fullmatch(r"study-\d{8}-\d{6}-[0-9a-f]{4}", i) for i in ids)
    assert all(ID_PATTERN.fullmatch(i) for i in ids)
    assert len(set(ids)) > 40  # 4 random hex digits: a collision in 50 is rare
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", timestamped_id())


def test_a_seeds_folder_is_numbered_in_four_digits_under_its_campaign():
    assert seed_dir("c1", 7) == "campaigns/c1/seed_0007"
    assert seed_dir("c1", 12345) == "campaigns/c1/seed_12345"
