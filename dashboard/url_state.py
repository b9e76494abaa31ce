"""Page state in the URL: a widget whose value starts from, and is written back to, a
query parameter, so that a view (a selection, filters, a tab) can be bookmarked and shared.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st


def url_widget(
    widget: Callable[..., Any],
    label: str,
    param: str,
    options: Sequence[Any],
    default: Any,
    many: bool = False,
    say_unknown: bool = True,
    follow: bool = False,
    say_gone: bool = False,
    **kwargs: Any,
) -> Any:
    """`widget` (st.selectbox / st.multiselect / st.radio or a column's) over `options`,
    set from the query parameter `param` (values matched as text; unknown ones left out,
    and kept for `url_unknown`), else `default`; the chosen value is written back to the URL
    (with `follow`, only a value other than the default).

    The URL wins when it changed since this widget last wrote it (a link, a bookmark, the
    browser's back button); otherwise the widget keeps what the user chose. Values of the
    link that match nothing are said in one line (`say_unknown`), not silently replaced
    (`?seed=99` showed seed 0 without a word). `follow`: a choice still at the default
    follows it when the default changes (not for a default computed from the URL itself,
    as Compare's group, which would follow its own writes); such a default stays out of the
    URL, so that a link does not pin it once it has moved on. `say_gone`: a chosen value
    whose option has gone since (a campaign deleted) is said in a toast."""
    qp, options, key = st.query_params, list(options), f"url:{param}"
    url_now = tuple(qp.get_all(param)) if param in qp else ()
    wanted = (
        url_now if param in qp else (tuple(str(d) for d in default) if many else (str(default),))
    )
    synced = st.session_state.get(f"{key}:synced")
    linked = param in qp and (key not in st.session_state or synced != url_now)
    before = st.session_state.get(f"{key}:default")
    if follow and linked and synced == url_now and before == set(url_now):
        # The widget's own write of its old default, its state dropped by a run that did
        # not draw it (another tab): not a link, so the new default holds.
        linked = False
        wanted = tuple(str(d) for d in default) if many else (str(default),)
    if linked:
        known = {str(o) for o in options}
        st.session_state[f"{key}:unknown"] = [w for w in url_now if w not in known]
        if many and not known.intersection(url_now):
            # Nothing of the link is here: the default, not an empty selection (a
            # gallery filter that shows no seed).
            wanted = tuple(str(d) for d in default)
    elif param not in qp and key not in st.session_state:
        st.session_state.pop(f"{key}:unknown", None)  # a fresh visit without the link
    if key in st.session_state and synced != url_now:
        # Changed from outside (a link, a bookmark, back): the URL replaces the widget's
        # remembered value.
        st.session_state[key] = (
            _in_order(options, wanted)
            if many
            else next((o for o in options if str(o) == wanted[0]), st.session_state[key])
        )
    # A remembered (or just replaced) value is the widget's; passing a default as well
    # would make Streamlit warn on the page.
    remembered = key in st.session_state
    # A choice still at its default follows the default when that changes: a resumed
    # campaign's gallery kept "misclassified" (its "interrupted" gone) and hid the seeds
    # that survived, which a fresh visit shows.
    now_default = {str(d) for d in default} if many else {str(default)}
    if follow and remembered and not linked and before is not None and before != now_default:
        value = st.session_state[key]
        if {str(v) for v in (value if many else [value])} == before:
            del st.session_state[key]
            remembered, wanted = False, tuple(str(d) for d in (default if many else [default]))
    st.session_state[f"{key}:default"] = now_default
    if remembered and many:  # options can change between runs (a deleted campaign's tag)
        kept = [o for o in st.session_state[key] if o in options]
        dropped = [str(o) for o in st.session_state[key] if o not in options]
        if say_gone and dropped:
            # A campaign deleted while Compare showed it just left the selection.
            st.toast(f"{label}: {', '.join(dropped)} no longer here (deleted?), left out")
        if kept or not st.session_state[key]:
            st.session_state[key] = kept
        else:
            # Every value chosen has gone (a resumed campaign has no `interrupted` seeds
            # left): the default, not an empty selection that shows nothing.
            del st.session_state[key]
            remembered, wanted = False, tuple(str(d) for d in default)
    elif remembered and st.session_state[key] not in options:
        del st.session_state[key]
        remembered = False
    if many:
        if not remembered:
            kwargs["default"] = _in_order(options, wanted)
        value = widget(label, options, key=key, **kwargs)
        # At a default that follows the page, left out: the live gallery wrote its
        # `searching`, and the link pinned it once the campaign had finished.
        written = () if follow and {str(v) for v in value} == now_default else value
        if written:
            qp[param] = [str(v) for v in value]
        elif param in qp:
            del qp[param]
        written = tuple(str(v) for v in written)  # () : the parameter is left out
    else:
        if not remembered:
            start = next((o for o in options if str(o) == wanted[0]), default)
            kwargs["index"] = options.index(start) if start in options else 0
        value = widget(label, options, key=key, **kwargs)
        kept = value is not None and not (follow and {str(value)} == now_default)
        if kept:
            qp[param] = str(value)
        elif param in qp:
            del qp[param]
        written = (str(value),) if kept else ()
    if not linked and synced is not None and written != synced:
        st.session_state.pop(f"{key}:unknown", None)  # the user chose since the link
    st.session_state[f"{key}:synced"] = written
    if say_unknown and (gone := url_unknown(param)):
        # In the widget's words: "showing misclassified" beside "A and B disagree" misled.
        said = kwargs.get("format_func", str)
        now = ", ".join(map(said, value)) if many else value if value is None else said(value)
        st.caption(
            f"⚠ The link gives {label} = {', '.join(gone)}, which matches nothing "
            f"here; showing {now if now not in (None, '') else 'all'}."
        )
    return value


def url_text(widget: Callable[..., Any], label: str, param: str, **kwargs: Any) -> str:
    """`widget` (st.text_input or a column's) set from, and written back to, the query
    parameter `param`, by the same rule as `url_widget`: a changed URL wins, else the
    user's text; an empty text leaves the parameter out."""
    qp, key = st.query_params, f"url:{param}"
    url_now = qp.get(param, "")
    if key not in st.session_state or st.session_state.get(f"{key}:synced") != url_now:
        st.session_state[key] = url_now
    value = widget(label, key=key, **kwargs)
    if value:
        qp[param] = value
    elif param in qp:
        del qp[param]
    st.session_state[f"{key}:synced"] = value
    return value


def _in_order(options: list[Any], wanted: tuple[str, ...]) -> list[Any]:
    """The options named in `wanted`, in the URL's order (a comparison's column order)."""
    by_text = {str(o): o for o in options}
    return list(dict.fromkeys(by_text[w] for w in wanted if w in by_text))


def url_unknown(param: str) -> list[str]:
    """The values the last link or bookmark gave `param` that matched no option (a deleted
    campaign, a link from another home): the page says so instead of dropping them."""
    return st.session_state.get(f"url:{param}:unknown", [])


def url_int(label: str, param: str, key: str, low: int, high: int) -> None:
    """Before a number widget keyed `key` (over [low, high]) draws: where the query
    parameter `param` changed since the widget last wrote it (a link, a bookmark, back),
    its value, clamped to [low, high], replaces the widget's; a link without it, `high`
    (the widget's "no filter"). A value that is no whole number is said in one line, as
    `url_widget` says unknown values."""
    qp = st.query_params
    url_now = qp.get(param, "")
    if st.session_state.get(f"url:{param}:synced") == url_now:
        return
    st.session_state[f"url:{param}:synced"] = url_now
    if not url_now:
        if f"url:{param}:seen" in st.session_state:  # back to a link without the filter
            st.session_state[key] = high
        return
    st.session_state[f"url:{param}:seen"] = True
    try:
        st.session_state[key] = min(max(int(url_now), low), high)
    except ValueError:
        st.caption(
            f"⚠ The link gives {label} = {url_now}, which is not a whole number; "
            f"showing {st.session_state.get(key, high)}."
        )


def url_int_written(param: str, value: int, omit: int | None = None) -> None:
    """After the widget of `url_int` drew: its value to the URL, left out at `omit`."""
    qp = st.query_params
    if value == omit or value is None:
        if param in qp:
            del qp[param]
    else:
        qp[param] = str(value)
    st.session_state[f"url:{param}:synced"] = qp.get(param, "")
    st.session_state[f"url:{param}:seen"] = True
