"""Charts drawn from a kept Vega-Lite spec: built and converted once per chart and data.

Profiled (docs/measured/dashboard.md, "Time to act"): building an altair chart validates
every encoding against the Vega-Lite schema, and `st.altair_chart` validates the whole
spec again, at every page run: about a third of a finished campaign's rerun, for charts
whose data had not changed. Here the spec (its data already in Arrow) is kept per builder
and per content of its arguments, so a rerun, and the live panel's refresh of a campaign
whose rows have not moved, draws it with no altair work at all.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import streamlit as st
from streamlit.elements import vega_charts

from dashboard.memo import kept


def _convert(chart: Any) -> dict[str, Any] | None:
    # Streamlit's own conversion (the altair theme it uses, data as Arrow, under its lock
    # on altair's globals); where a Streamlit release renames it, charts are drawn the
    # plain way, uncached.
    convert = getattr(vega_charts, "_convert_altair_to_vega_lite_spec", None)
    return None if convert is None else convert(chart)


def _spec(build: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any] | None:
    return _convert(build(*args, **kwargs))


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
    spec = spec_of(build, *args, **kwargs) if keep else None
    if spec is None:
        return where.altair_chart(build(*args, **kwargs), width=width)
    # Drawing takes the datasets out of the spec it is given: the kept one stays whole.
    return where.vega_lite_chart(spec=copy.deepcopy(spec), width=width)
