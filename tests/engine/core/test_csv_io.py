"""CSV tables from someone else, read with their size bounded: a header of a hundred
thousand names, or a gigabyte on one line, is one line of refusal, not minutes of work
or a cell per comma in memory. Each test is bounded by a timeout: the unfixed reader
ran on for minutes."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.csv_io import MAX_COLUMNS, MAX_LINE, _names, read_table
from engine.core.errors import ConfigError


@pytest.mark.timeout(60)
def test_a_header_of_a_hundred_thousand_names_is_refused(tmp_path: Path):
    path = tmp_path / "wide.csv"
    n = 100_000  # 0.9 MB: the old reader named its columns in quadratic time
    path.write_text(",".join(f"c{i}" for i in range(n)) + "\n" + ",".join("1" * n) + "\n")
    with pytest.raises(
        ConfigError, match=rf"has 100,000 columns, expected at most {MAX_COLUMNS:,}"
    ):
        read_table(path)


@pytest.mark.timeout(60)
def test_a_line_too_long_is_refused_before_csv_splits_it(tmp_path: Path):
    path = tmp_path / "one-line.csv"
    path.write_text("a,b\n" + "1," * (MAX_LINE // 2 + 1) + "\n")
    with pytest.raises(ConfigError, match=rf"a line longer than {MAX_LINE:,} characters"):
        read_table(path)


@pytest.mark.timeout(60)
def test_repeated_names_are_numbered_as_pandas_does_and_in_linear_time():
    header = ["x", "x", "x.1", "", "x", " ", "x.1", "Unnamed: 3"]
    numbered = ["x", "x.1", "x.1.1", "Unnamed: 3", "x.2", "Unnamed: 5", "x.1.2"]
    assert _names(header) == [*numbered, "Unnamed: 3.1"]
    # 10,000 repeats of one name: cubic before (each name tried every earlier suffix).
    names = _names(["x"] * MAX_COLUMNS)
    assert names[-1] == f"x.{MAX_COLUMNS - 1}" and len(set(names)) == MAX_COLUMNS
