"""Tags and notes of a campaign or a study, shown and edited in place (store/annotations.py;
the CLI's `latentfuzz tag` and `latentfuzz note` write the same rows)."""

from __future__ import annotations

import streamlit as st

from dashboard.text import md_text
from store import Store, StoreError
from store import annotations as an


@st.fragment
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
        tags = st.text_input("Tags (comma-separated)", ", ".join(now["tags"]), key=f"tags-{id_}")
        notes = st.text_area("Notes", now["notes"], key=f"notes-{id_}")
        if st.form_submit_button("Save"):
            try:
                an.annotate(store, kind, id_, tags=tags.split(","), notes=notes)
            except StoreError as e:
                st.error(str(e))
            else:
                st.rerun()
