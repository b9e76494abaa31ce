"""Charts drawn from a kept Vega-Lite spec: built and converted once per chart and data.

Profiled (docs/measured/dashboard.md, "Time to act"): building an altair chart validates
every encoding against the Vega-Lite schema, and `st.altair_chart` validates the whole
spec again, at every page run: about a third of a finished campaign's rerun, for charts
whose data had not changed. Here the spec (its data already in Arrow) is kept per builder
and per content of its arguments, so a rerun, and the live panel's refresh of a campaign
whose rows have not moved, draws it with no altair work at all.

A chart of many rows is drawn on a canvas, not in SVG: a finished campaign's convergence
chart (480 points) made 700 SVG elements, each with its description for screen readers,
and was a tenth of the page's first load in a new browser (docs/measured/dashboard.md).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import streamlit as st
from streamlit.elements import vega_charts

from dashboard.memo import kept

#: Rows of data above which a chart is drawn on a canvas (few: SVG, whose marks carry
#: their fields as descriptions, which the live chart's first points are found by).
CANVAS_ROWS = 200


def rows(spec: dict[str, Any]) -> int:
    """How many rows of data the spec's named datasets hold (Arrow streams, as Streamlit's
    conversion leaves them; rows given inline count too)."""
    n = 0
    for d in (spec.get("datasets") or {}).values():
        if isinstance(d, bytes | bytearray | memoryview):
            with pa.ipc.open_stream(pa.py_buffer(d)) as reader:
                n += sum(batch.num_rows for batch in reader)
        elif hasattr(d, "__len__"):
            n += len(d)
    return n


def on_canvas(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec`, drawn by Vega's canvas renderer where it has more than CANVAS_ROWS rows
    (Streamlit reads the renderer from the spec's usermeta, as vega-embed's option)."""
    if rows(spec) > CANVAS_ROWS:
        meta = dict(spec.get("usermeta") or {})
        meta["embedOptions"] = {**(meta.get("embedOptions") or {}), "renderer": "canvas"}
        spec["usermeta"] = meta
    return spec


def _convert(chart: Any) -> dict[str, Any] | None:
    # Streamlit's own conversion (the altair theme it uses, data as Arrow, under its lock
    # on altair's globals); where a Streamlit release renames it, charts are drawn the
    # plain way, uncached.
    convert = getattr(vega_charts, "_convert_altair_to_vega_lite_spec", None)
    return None if convert is None else convert(chart)


def _spec(build: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any] | None:
    spec = _convert(build(*args, **kwargs))
    return None if spec is None else on_canvas(spec)


def spec_of(build: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any] | None:
    """The Vega-Lite spec of `build(*args, **kwargs)`, kept for the same content."""
    return kept(_spec, build, *args, **kwargs)


def chart(
    build: Callable[..., Any],
    *args: Any,
    where: Any = None,
    width: Any = "stretch",
    keep: bool = True,
    **kwargs: Any,
) -> Any:
    """Draw `build(*args, **kwargs)` (an altair chart) in `where` (the page when None) from
    its kept spec; the rest of `st.vega_lite_chart`'s options are not needed here.
    keep=False for data that moves at every run (a running campaign's rows): each
    refresh's spec, its rows in Arrow, would only crowd the kept ones out."""
    where = st if where is None else where
    # Drawing takes the datasets out of the spec it is given: the kept one stays whole.
    spec = copy.deepcopy(spec_of(build, *args, **kwargs)) if keep else _spec(build, *args, **kwargs)
    if spec is None:
        return where.altair_chart(build(*args, **kwargs), width=width)
    return where.vega_lite_chart(spec=spec, width=width)
