"""dashboard/memo.py and dashboard/vega.py: results and chart specs kept per content of
their inputs (issue 36, point 7: a rerun on the same rows builds nothing again)."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from dashboard import memo, vega
from dashboard.memo import content_key, kept


def test_a_key_changes_with_any_value_order_type_or_attribute():
    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    key = content_key(df)
    assert content_key(df.copy()) == key
    assert content_key(df.assign(a=[1, 2, 4])) != key  # one value
    assert content_key(df.iloc[::-1]) != key  # order (drawn left to right)
    assert content_key(df.astype({"a": float})) != key  # type
    assert content_key(df.rename(columns={"b": "c"})) != key  # a column's name
    tagged = df.copy()
    tagged.attrs["along"] = "perturbation"
    assert content_key(tagged) != key  # Compare's grid axis rides in attrs
    # Cells of lists (unhashable for pandas' hash) still key by every value.
    lists = pd.DataFrame({"answers": [[1, 2], [3]]})
    assert content_key(lists) != content_key(pd.DataFrame({"answers": [[1, 2], [4]]}))
    # An array's repr elides its middle: the key does not.
    a = np.zeros(5000)
    b = a.copy()
    b[2500] = 1
    assert repr(a) == repr(b) and content_key(a) != content_key(b)
    assert content_key({"gaps": [0.1, 0.2]}) != content_key({"gaps": [0.1, 0.3]})


def test_kept_computes_once_per_content():
    calls = []

    def double(df: pd.DataFrame) -> pd.DataFrame:
        calls.append(1)
        return df * 2

    df = pd.DataFrame({"a": [1, 2]})
    assert kept(double, df)["a"].tolist() == [2, 4]
    assert kept(double, df.copy())["a"].tolist() == [2, 4]
    assert len(calls) == 1
    assert kept(double, pd.DataFrame({"a": [1, 3]}))["a"].tolist() == [2, 6]
    assert len(calls) == 2


def bars(df: pd.DataFrame, title: str) -> alt.Chart:
    return alt.Chart(df).mark_bar().encode(x="k:N", y="v:Q").properties(title=title)


def test_a_chart_is_converted_once_and_drawn_from_its_kept_spec():
    df = pd.DataFrame({"k": ["a", "b"], "v": [1.0, 2.0]})
    before = memo.computed
    spec = vega.spec_of(bars, df, "one")
    assert spec is not None and spec["title"] == "one"
    # The data travels beside the spec (Arrow), as st.altair_chart sends it.
    assert len(spec["datasets"]) == 1
    assert vega.spec_of(bars, df.copy(), "one") is spec
    assert memo.computed == before + 1
    assert vega.spec_of(bars, df, "two")["title"] == "two"  # another argument
    assert vega.spec_of(bars, df.assign(v=[1.0, 3.0]), "one") is not spec  # other rows
    assert memo.computed == before + 3


def test_a_chart_of_moving_rows_is_drawn_without_being_kept():
    df = pd.DataFrame({"k": ["a", "b"], "v": [5.0, 6.0]})
    before = memo.computed
    vega.chart(bars, df, "live", keep=False)  # (drawn in bare mode: no page to show it)
    assert memo.computed == before


def points(df: pd.DataFrame) -> alt.LayerChart:
    line = alt.Chart(df).mark_line().encode(x=alt.X("g:Q"), y=alt.Y("v:Q"))
    return line + line.mark_point()


def test_a_chart_of_many_rows_is_drawn_on_a_canvas_and_a_small_one_in_svg():
    # A finished campaign's convergence chart (480 points) made 700 SVG elements.
    many = pd.DataFrame({"g": np.arange(vega.CANVAS_ROWS + 1), "v": 1.0})
    few = many.head(10)
    spec = vega.spec_of(points, many)
    assert vega.rows(spec) == vega.CANVAS_ROWS + 1
    assert spec["usermeta"]["embedOptions"]["renderer"] == "canvas"
    # Small, it stays in SVG, whose marks carry their fields for screen readers (and for
    # the bench, which finds a launch's first points by them).
    small = vega.spec_of(points, few)
    assert vega.rows(small) == 10 and "usermeta" not in small
