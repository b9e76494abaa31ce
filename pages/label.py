"""Label: one image at a time, blind, one key press per answer.

Nothing about where an image came from reaches this page: no generator, campaign,
classifier prediction, fitness or expected label, only the image and the question.
"""

from __future__ import annotations

from datetime import datetime

import streamlit as st

from dashboard.components import load_image
from dashboard.data import get_home, get_store
from dashboard.text import md_text
from engine.datasets import get_dataset
from engine.labelling import marker_choices
from store import StoreBusy
from store import labels as ls

store, home = get_store(), get_home()
studies = ls.studies(store)
studies = studies[studies["source"] == "campaigns"]  # imported studies were labelled elsewhere
st.title("Label")
if studies.empty:
    st.info("No study yet: create one on the Validity studies page.")
    st.stop()

sid = st.query_params.get("study")
if sid not in set(studies["id"]):
    sid = st.selectbox("Study", studies["id"], format_func=lambda i: studies.set_index("id")
                       .loc[i, "name"])  # fmt: skip
    st.query_params["study"] = sid
study = ls.study(store, sid)

who = st.query_params.get("labeller")
if not who:
    with st.form("name"):
        name = st.text_input("Your name", help="Use the same name to resume later.")
        if st.form_submit_button("Start labelling", type="primary") and name.strip():
            st.query_params["labeller"] = name.strip()
            st.rerun()
    st.stop()

# Per browser tab: the item on screen, when it was shown, items skipped, an unsaved answer.
key = f"label:{sid}:{who}"
if key not in st.session_state:
    ls.join(store, sid, who)
    st.session_state[key] = {"item": None, "shown_at": None, "skip": set(), "pending": None}
state = st.session_state[key]


def show_next() -> None:
    state["item"] = ls.next_item(store, sid, who, frozenset(state["skip"]))
    state["shown_at"] = datetime.now()


def save(value: int) -> None:
    state["pending"] = (state["item"], value, state["shown_at"])
    flush()


def flush() -> None:
    """Write the pending answer; if the store stays busy, keep it and try again next run."""
    if state["pending"] is None:
        return
    item, value, shown_at = state["pending"]
    try:
        ls.answer(store, sid, item, who, value, shown_at)
    except StoreBusy:
        return
    state["pending"] = None
    state["skip"].discard(item)
    show_next()


def undo() -> None:
    item = ls.undo(store, sid, who)
    if item is not None:
        state["item"], state["shown_at"] = item, datetime.now()


def skip() -> None:
    state["skip"].add(state["item"])
    ls.release(store, sid, state["item"], who)
    show_next()


flush()
if state["pending"] is not None:
    st.warning("The store is busy; your last answer is kept and will be saved on the next key.")
if state["item"] is None:
    show_next()

p = ls.progress(store, sid, who)
a, b = st.columns([1, 3])
a.metric("my answers", p["mine"])
b.progress(p["done"] / max(1, p["wanted"]), text=f"study: {p['done']} of {p['wanted']} answers")
st.caption(f"labelling as **{md_text(who)}**")

if state["item"] is None:
    st.success("Nothing left for you in this study. Thank you!")
    st.button("Undo my last answer", on_click=undo, shortcut="Backspace")
    st.stop()

ds = get_dataset(study["dataset"])
img = load_image(home, ls.item_image(store, sid, state["item"]), scale=10)
left, right = st.columns([2, 3])
with left:
    if img is None:
        st.error("This image file is missing from the data directory; skip it (S).")
    else:
        st.image(img, width=280)
with right:
    st.subheader("Which class is this?")
    cols = st.columns(5)
    for i, name in enumerate(ds.class_names):
        cols[i % 5].button(
            name, key=f"class{i}", on_click=save, args=(i,), width="stretch",
            shortcut=str(i) if len(ds.class_names) <= 10 else None,
        )  # fmt: skip
    markers = marker_choices(ds)
    for col, (name, text, value, shortcut) in zip(st.columns(len(markers)), markers, strict=True):
        col.button(text, key=name, on_click=save, args=(value,), shortcut=shortcut,
                   width="stretch")  # fmt: skip
    z, s = st.columns(2)
    z.button("undo last answer", key="undo", on_click=undo, shortcut="Backspace",
             disabled=p["mine"] == 0, type="tertiary")  # fmt: skip
    s.button("skip for now", key="skip", on_click=skip, shortcut="S", type="tertiary")
