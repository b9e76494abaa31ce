"""Page state in the URL: a widget whose value starts from, and is written back to, a
query parameter, so that a view (a selection, filters, a tab) can be bookmarked and shared.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st


def url_widget(
    widget: Callable[..., Any], label: str, param: str, options: Sequence[Any],
    default: Any, many: bool = False, **kwargs: Any,
) -> Any:  # fmt: skip
    """`widget` (st.selectbox / st.multiselect / st.radio or a column's) over `options`,
    first set from the query parameter `param` (values matched as text; unknown ones
    ignored), else `default`; the chosen value is written back to the URL."""
    qp, options = st.query_params, list(options)
    if many:
        wanted = set(qp.get_all(param)) if param in qp else {str(d) for d in default}
        value = widget(label, options, default=[o for o in options if str(o) in wanted],
                       key=f"url:{param}", **kwargs)  # fmt: skip
        if value:
            qp[param] = [str(v) for v in value]
        elif param in qp:
            del qp[param]
        return value
    raw = qp.get(param)
    start = next((o for o in options if str(o) == raw), default)
    index = options.index(start) if start in options else 0
    value = widget(label, options, index=index, key=f"url:{param}", **kwargs)
    if value is not None:
        qp[param] = str(value)
    return value
