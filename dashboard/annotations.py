"""Tags and notes of a campaign or a study, shown and edited in place (store/annotations.py;
the CLI's `latentfuzz tag` and `latentfuzz note` write the same rows)."""

from __future__ import annotations

import streamlit as st

from dashboard.data import fragment
from dashboard.text import md_text
from store import Store, StoreError
from store import annotations as an


def _save(store: Store, kind: str, id_: str) -> None:
    """Save's callback: it runs before the fragment draws, so the new tags show in that
    one run. (A save reran the whole page after it, the Campaign page's charts, gallery
    and metrics included: 2.2 s for a line of tags; profiled in issue 36.)"""
    tags, notes = st.session_state[f"tags-{id_}"], st.session_state[f"notes-{id_}"]
    try:
        an.annotate(store, kind, id_, tags=tags.split(","), notes=notes)
    except StoreError as e:
        st.session_state[f"annotate-error-{id_}"] = str(e)
    else:
        st.session_state.pop(f"annotate-error-{id_}", None)


@fragment
def annotation_editor(store: Store, kind: str, id_: str) -> None:
    """The tags as a line under the title, and an expander to edit tags and notes."""
    now = an.get(store, kind, id_)
    if now["tags"] or now["notes"]:
        # Plain escaped text: inside a code span markdown's escapes show as typed ("\`").
        tags = " · ".join(md_text(t) for t in now["tags"])
        st.markdown(f"**Tags:** {tags}" if tags else "")
        if now["notes"]:
            st.caption(md_text(now["notes"]))
    with st.expander("Tags and notes"), st.form(f"annotate-{kind}-{id_}", border=False):
        st.text_input("Tags (comma-separated)", ", ".join(now["tags"]), key=f"tags-{id_}")
        st.text_area("Notes", now["notes"], key=f"notes-{id_}")
        st.form_submit_button("Save", on_click=_save, args=(store, kind, id_))
        if error := st.session_state.get(f"annotate-error-{id_}"):
            st.error(error)
