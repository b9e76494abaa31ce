"""Reading YAML from shared files within bounds (engine/core/yaml_io.py): alias bombs,
deep nesting and oversized files are refused in one line before anything walks them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine.core import errors, yaml_io
from engine.core.errors import ConfigError, yaml_problem
from engine.core.yaml_io import read_mapping


def billion_laughs(levels: int = 9, fan: int = 9) -> str:
    """The classic: each level lists the one before `fan` times, `fan ** levels` strings
    in all from a few hundred bytes."""
    text = "a: &a [" + ",".join(['"lol"'] * fan) + "]\n"
    prev = "a"
    for level in "bcdefghijklmnop"[: levels - 1]:
        text += f"{level}: &{level} [" + ",".join([f"*{prev}"] * fan) + "]\n"
        prev = level
    return text + f"name: *{prev}\n"


def one_line(e: pytest.ExceptionInfo) -> str:
    msg = str(e.value)
    assert "\n" not in msg and len(msg) < 400, msg
    return msg


def test_a_billion_laughs_in_a_config_is_refused_before_it_is_expanded(tmp_path: Path):
    bomb = billion_laughs()
    assert len(bomb) < 400  # the 360-byte file of the report
    cfg = tmp_path / "c.yaml"
    cfg.write_text(bomb)
    with pytest.raises(ConfigError) as e:
        read_mapping(cfg)
    msg = one_line(e)
    assert str(cfg) in msg and "alias" in msg and "100,000" in msg


def test_the_bomb_is_counted_once_per_node_not_per_expansion(monkeypatch):
    # Counting work, not time: the check visits each distinct node once, so a bomb of
    # 10**15 expanded strings costs what its few dozen nodes cost.
    visits = 0
    children = yaml_io._children

    def counted(node):
        nonlocal visits
        visits += 1
        return children(node)

    monkeypatch.setattr(yaml_io, "_children", counted)
    with pytest.raises(ConfigError):
        yaml_io.load_text(billion_laughs(levels=15, fan=10))
    assert visits < 1_000


def test_five_thousand_nested_brackets_are_one_line_not_a_recursion_error(tmp_path: Path):
    cfg = tmp_path / "deep.yaml"
    cfg.write_text("name: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError) as e:
        read_mapping(cfg)
    assert "64 levels deep" in one_line(e)
    with pytest.raises(ConfigError):  # mappings, in block style
        yaml_io.load_text("".join(" " * i + f"k{i}:\n" for i in range(200)))


def test_depth_reached_through_aliases_counts_too():
    text = (
        "a: &a " + "[" * 40 + "]" * 40 + "\nb: &b " + "[*a]" + "\nc: " + "[" * 30 + "*a" + "]" * 30
    )
    with pytest.raises(ConfigError, match="levels deep"):
        yaml_io.load_text(text)


def test_an_alias_inside_its_own_value_is_refused():
    with pytest.raises(ConfigError, match="inside the value it names"):
        yaml_io.load_text("a: &a [1, *a]")


def test_ordinary_anchors_and_merge_keys_still_read():
    text = "base: &b {generations: 3, population: 4}\ngrid:\n  - {<<: *b, step: 0.1}\n  - *b\n"
    data = yaml_io.load_text(text)
    assert data["grid"] == [{"generations": 3, "population": 4, "step": 0.1}, data["base"]]
    assert yaml_io.load_text("x: [" + ", ".join(["1"] * 50_000) + "]")["x"][-1] == 1


def test_an_oversized_settings_file_is_refused_before_it_is_read(tmp_path: Path):
    big = tmp_path / "big.yaml"
    with big.open("wb") as f:
        f.truncate(yaml_io.MAX_BYTES + 1)  # sparse: nothing is written, nothing would be read
    with pytest.raises(ConfigError) as e:
        read_mapping(big, "mapping file")
    assert f"{yaml_io.MAX_BYTES + 1:,} bytes" in one_line(e)


def test_a_bomb_in_a_strategy_setting_on_the_command_line_is_refused():
    from engine.cli.strategy_flags import parse_params

    with pytest.raises(ConfigError, match="-p embedding"):
        parse_params(["embedding=" + "[" * 200 + "]" * 200])


def test_messages_of_others_are_clipped_to_one_short_line():
    assert errors.clip("word " * 10, limit=200) == ("word " * 10)
    cut = errors.clip("x " * 100_000)
    assert len(cut) <= 201 and cut.endswith("x…")
    assert "\n" not in errors.clip("a\nb")
    said = yaml_problem(yaml.YAMLError("while scanning\n" + "b " * 100_000))
    assert "\n" not in said and len(said) < 400
