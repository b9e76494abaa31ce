"""Label: one image at a time, blind, one key press per answer.

Fast by construction (issue 11: under 300 ms from key to next image): a key reruns only
the labelling fragment; the store holds the next item reserved for this labeller and the
page holds its image, so the answer's callback swaps to it at once and the answer is
written, with the next reservation, after the new image is on its way to the browser.

A key press reruns only the labelling fragment, and its answer, the next claim and the
progress are one store transaction (store.judging.turn): the next image shows in a few
hundred milliseconds instead of a full page run of about 1.5 s.

Nothing about where an image came from reaches this page: no generator, campaign,
classifier prediction, fitness or expected label, only the image and the question.
"""

from __future__ import annotations

from datetime import datetime
from io import BytesIO

import streamlit as st

from dashboard.components import load_image
from dashboard.data import fragment, get_home, get_store
from dashboard.text import md_text, person_name
from engine.api import DatasetError, get_dataset, marker_choices
from store import StoreBusy, judging
from store import labels as ls

store, home = get_store(), get_home()
studies = ls.validity_studies(store)
studies = studies[studies["source"] == "campaigns"]  # imported studies were labelled elsewhere
st.title("Label")
if studies.empty:
    st.info("No study yet: create one on the Validity studies page.")
    st.stop()

sid = linked = st.query_params.get("study")
if sid not in set(studies["id"]):
    if linked is not None:
        # Not another study silently: a mistyped link had its labeller label the wrong one.
        st.warning(
            f"The link names a study this store does not hold ({linked}); pick the study to label."
        )
    sid = st.selectbox(
        "Study", studies["id"], format_func=lambda i: studies.set_index("id").loc[i, "name"]
    )
    if linked is not None and not st.button("Label this study", type="primary"):
        st.stop()
    st.query_params["study"] = sid
study = ls.validity_study(store, sid)

kept = st.session_state.get("labeller")  # checked when it was kept
who = st.query_params.get("labeller")
if who is not None:
    who, why = person_name(who)
    if why:  # a link with a blank or overlong name labels nothing under it
        st.warning(f"The link's labeller name cannot be used. {why}")
        st.query_params.pop("labeller", None)
        who = None
who = who or kept
if who:
    # Kept for this browser tab: the sidebar's link back to this page carries only the
    # study, and it asked the labeller's name again.
    st.query_params["labeller"] = st.session_state["labeller"] = who
if not who:
    with st.form("name"):
        name = st.text_input("Your name", help="Use the same name to resume later.")
        if st.form_submit_button("Start labelling", type="primary"):
            name, why = person_name(name)
            if why:
                st.error(why)
            else:
                st.query_params["labeller"] = name
                st.rerun()
    st.stop()

# Per browser tab: the item on screen and when it was shown, the next item reserved for
# this labeller, answers not yet written, items skipped, and prefetched image bytes.
key = f"label:{sid}:{who}"
if key not in st.session_state:
    judging.join(store, sid, who)
    st.session_state[key] = {
        "item": None,
        "shown_at": None,
        "upcoming": None,
        "pending": [],
        "skip": set(),
        "progress": None,
        "images": {},
    }
state = st.session_state[key]
try:
    ds = get_dataset(study["dataset"])
except DatasetError as e:  # a user's dataset removed or moved since
    st.error(f"Cannot show this: {e}")
    st.stop()


def png(path: str | None) -> bytes | None:
    img = load_image(home, path, scale=10)
    if img is None:
        return None
    buf = BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def take_turn(**action) -> bool:
    """Write the pending answers and `action`, and take the item the store serves.
    False when the store stayed busy: the answers stay pending, never dropped."""
    try:
        t = judging.turn(
            store, sid, who, frozenset(state["skip"]), answers=state["pending"], **action
        )
    except StoreBusy:
        return False
    for item, *_ in state["pending"]:
        state["skip"].discard(item)
    state["pending"] = []
    if t["item"] != state["item"]:
        state["item"], state["shown_at"] = t["item"], datetime.now()
    state["upcoming"], state["progress"] = t["upcoming"], t["progress"]
    # Prefetch: the reserved next image is read and encoded now, before its key is pressed.
    images = state["images"]
    for item, path in ((t["item"], t["image"]), (t["upcoming"], t["upcoming_image"])):
        if item is not None and item not in images:
            images[item] = png(path)
    for old in [i for i in images if i not in (t["item"], t["upcoming"])]:
        del images[old]
    return True


def save(value: int, shown: int | None) -> None:
    if state["item"] is None or shown != state["item"]:
        # A key pressed for an image no longer current: keys pressed in quick succession
        # (or a held key's repeats) answered the next images before they were drawn. Each
        # button is the image's own (its key names the item), so a press that reaches the
        # server from an earlier image's buttons is dropped, not given to the next image.
        # Nor is there an image to answer before the page drew "nothing left".
        return
    state["pending"].append((state["item"], value, state["shown_at"]))
    if state["upcoming"] is None:  # nothing reserved (yet): write now and take what comes
        take_turn()
        return
    # Show the reserved item at once; the fragment writes the answer after drawing it.
    p = state["progress"]
    state["progress"] = {**p, "mine": p["mine"] + 1, "done": min(p["wanted"], p["done"] + 1)}
    state["item"], state["upcoming"], state["shown_at"] = state["upcoming"], None, datetime.now()


def undo() -> None:
    take_turn(undo=True)


def skip(shown: int | None) -> None:
    if shown != state["item"]:
        return  # pressed for an earlier image (see save)
    state["skip"].add(state["item"])
    take_turn(release=state["item"])


@fragment
def labelling() -> None:
    """Everything a key press changes; reruns alone, without the page around it."""
    if state["progress"] is None:
        take_turn()
    if state["progress"] is None:
        st.warning("The store is busy; reload the page in a moment.")
        return
    p = state["progress"]
    a, b = st.columns([1, 3])
    a.metric("my answers", p["mine"])
    b.progress(p["done"] / max(1, p["wanted"]), text=f"study: {p['done']} of {p['wanted']} answers")
    st.caption(f"labelling as **{md_text(who)}**")
    if state["item"] is None:
        missing = p["wanted"] - p["done"]
        st.success(
            "Nothing left for you in this study. Thank you!"
            + (
                f" {missing} answers are still missing: they need other labellers, or other "
                "labellers' screens hold their images (a hold lapses after "
                f"{judging.CLAIM_SECONDS // 60} minutes; reload then to see whether any came back "
                "to you)."
                if missing > 0
                else ""
            )
        )
        st.button("Undo my last answer", on_click=undo, shortcut="Backspace")
    else:
        question(p["mine"] == 0)
    if state["pending"] or state["upcoming"] is None and state["item"] is not None:
        # After drawing: write the answer and reserve the next item.
        shown = state["item"]
        if not take_turn():
            st.toast("The store is busy; your answer is kept and saved with the next key.")
        elif state["item"] != shown:  # the reservation had lapsed: show what was served
            st.rerun(scope="fragment")


def question(first: bool) -> None:
    """The image and one button per answer, each with its key."""
    img = state["images"].get(state["item"]) or png(ls.item_image(store, sid, state["item"]))
    left, right = st.columns([2, 3])
    with left:
        if img is None:
            st.error("This image file is missing from the data directory; skip it (S).")
        else:
            st.image(img, width=280)
    with right:
        st.subheader("Which class is this?")
        item = state["item"]
        cols = st.columns(5)
        for i, name in enumerate(ds.class_names):
            cols[i % 5].button(
                name,
                key=f"class{i}:{item}",
                on_click=save,
                args=(i, item),
                width="stretch",
                shortcut=str(i) if len(ds.class_names) <= 10 else None,
            )
        markers = marker_choices(ds)
        for col, (name, text, value, shortcut) in zip(
            st.columns(len(markers)), markers, strict=True
        ):
            col.button(
                text,
                key=f"{name}:{item}",
                on_click=save,
                args=(value, item),
                shortcut=shortcut,
                width="stretch",
            )
        z, s = st.columns(2)
        z.button(
            "undo last answer",
            key="undo",
            on_click=undo,
            shortcut="Backspace",
            disabled=first,
            type="tertiary",
        )
        s.button(
            "skip for now",
            key=f"skip:{item}",
            on_click=skip,
            args=(item,),
            shortcut="S",
            type="tertiary",
        )


labelling()
