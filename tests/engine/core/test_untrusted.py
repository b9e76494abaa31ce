"""The gate for paths and sizes from files the user did not write (engine/core/untrusted.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.core.untrusted import UntrustedFileError, bounded, inside, inside_any, quote


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "bundle"
    (r / "images").mkdir(parents=True)
    (r / "images" / "a.png").write_bytes(b"x")
    (tmp_path / "secret").write_text("s")
    return r


def test_a_relative_path_inside_is_resolved_from_the_root(root):
    assert inside(root, "images/a.png", "seed_image") == (root / "images" / "a.png").resolve()
    assert inside(root, "images/../images/a.png", "seed_image").name == "a.png"


def test_an_absolute_path_inside_is_accepted(root):
    assert inside(root, root / "images" / "a.png", "f") == (root / "images" / "a.png").resolve()


@pytest.mark.parametrize("bad", ["../secret", "images/../../secret", "/etc/passwd", "a\x00b"])
def test_a_path_leading_outside_is_refused_naming_the_field_and_the_path(root, bad):
    with pytest.raises(UntrustedFileError) as e:
        inside(root, bad, "seeds.result_image", source="bundle.zip")
    msg = str(e.value)
    assert "seeds.result_image in bundle.zip" in msg and "\n" not in msg
    assert repr(bad)[:20] in msg


def test_a_symlink_is_judged_by_where_it_leads(root):
    os.symlink(root.parent / "secret", root / "images" / "link.png")
    with pytest.raises(UntrustedFileError, match="link.png"):
        inside(root, "images/link.png", "seed_image")


def test_inside_any_reads_a_relative_path_from_the_first_root_only(root, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    assert inside_any([root, other], other / "x", "f") == (other / "x").resolve()
    with pytest.raises(UntrustedFileError):
        inside_any([root, other], "../other/x", "f")


def test_bounded_refuses_what_is_too_big_or_not_finite():
    assert bounded(10, 100, "height") == 10
    for bad in (101, float("inf"), float("nan")):
        with pytest.raises(UntrustedFileError, match="height is"):
            bounded(bad, 100, "height", unit="px")


def test_quote_cuts_long_values_and_says_how_long_they_were():
    q = quote("x" * 100_000_000)
    assert len(q) < 200 and "100,000,002 characters" in q
    assert quote("short") == "'short'"
