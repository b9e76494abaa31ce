"""Campaign configs from shared files: long values are bounded and never echoed whole."""

from __future__ import annotations

import pytest

from engine.campaign.config import parse_config
from engine.core.errors import ConfigError

NAME_LIMIT, PATH_LIMIT = 200, 4096  # engine.campaign.config's


def test_a_100_mb_name_is_refused_in_one_short_line():
    with pytest.raises(ConfigError) as e:
        parse_config({"name": "A" * 100_000_000})
    msg = str(e.value)
    assert "\n" not in msg and len(msg) < 400, msg[:400]
    assert f"at most {NAME_LIMIT} characters" in msg and "100,000,002 characters" in msg


@pytest.mark.parametrize(
    ("field", "limit"),
    [
        ("name", NAME_LIMIT),
        ("dataset", NAME_LIMIT),
        ("strategy", NAME_LIMIT),
        ("fitness", NAME_LIMIT),
        ("criterion", NAME_LIMIT),
        ("device", NAME_LIMIT),
        ("generator", PATH_LIMIT),
        ("classifier", PATH_LIMIT),
        ("classifier_b", PATH_LIMIT),
        ("data_dir", PATH_LIMIT),
    ],
)
def test_every_text_setting_is_bounded(field: str, limit: int):
    parse_config({field: "x" * limit} if field in ("name", "data_dir") else {})
    with pytest.raises(ConfigError) as e:
        parse_config({field: "x" * (limit + 1)})
    assert f"config.{field}" in str(e.value) and len(str(e.value)) < 400
