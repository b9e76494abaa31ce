"""Deleting a campaign from its page: a confirmation that names what goes, then the
Campaigns page says what went. (The page jumped to another campaign without a word.)"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dashboard.text import md_text
from store import Store, StoreBusy, StoreError
from store import campaigns as sc
from store.admin import delete_campaign, validity_studies_using

#: Session key of the message the Campaigns page shows once after a delete.
DELETED = "campaigns:deleted"
CAMPAIGNS_PAGE = Path(__file__).resolve().parent.parent / "pages" / "campaigns.py"


def size_text(n: int) -> str:
    """Bytes as people read them: 1.2 MB."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"  # (not reached)


def _folder(home: Path, cid: str) -> tuple[int, int]:
    folder = Path(home) / "campaigns" / cid
    files = [f for f in folder.rglob("*") if f.is_file()] if folder.is_dir() else []
    return len(files), sum(f.stat().st_size for f in files)


def _named(cid: str, name: object) -> str:
    return cid if not isinstance(name, str) or name in ("", cid) else f"{name} ({cid})"


def delete_panel(store: Store, home: Path, cid: str, name: object) -> None:
    """A Delete button; then what it deletes (seeds, rows, the folder's files) with Delete
    and Cancel; after a delete, the Campaigns page with a message of what was removed."""
    asked = f"delete:{cid}"

    def ask(yes: bool) -> None:  # before the run that draws the answer (no second run)
        st.session_state[asked] = yes

    if not st.session_state.get(asked):
        st.button("Delete this campaign…", key=f"{asked}:ask", on_click=ask, args=(True,))
        return
    if used := validity_studies_using(store, cid):
        # Said before any confirmation: the click on Delete refused it, and left Delete on
        # offer. (delete_campaign still refuses, for a study made since.)
        studies = ", ".join(used)
        st.warning(
            f"Campaign **{md_text(_named(cid, name))}** cannot be deleted: validity "
            f"stud{'ies' if len(used) > 1 else 'y'} {md_text(studies)} "
            f"show{'' if len(used) > 1 else 's'} its images, and would lose them.",
            icon=":material/block:",
        )
        st.button("Cancel", key=f"{asked}:cancel", on_click=ask, args=(False,))
        return
    what = sc.footprint(store, cid)
    files, size = _folder(home, cid)
    st.warning(
        f"Delete campaign **{md_text(_named(cid, name))}**? This removes its "
        f"{what['seeds']:,} seeds ({what['rows']:,} rows of the store) and its folder of "
        f"{files:,} files ({size_text(size)}). It cannot be undone.",
        icon=":material/delete:",
    )
    yes, no, _ = st.columns([1, 1, 4])
    no.button("Cancel", key=f"{asked}:cancel", on_click=ask, args=(False,))
    if yes.button("Delete", type="primary", key=f"{asked}:yes"):
        try:
            done = delete_campaign(store, home, cid)
        except (StoreError, StoreBusy) as e:  # running since the page was drawn, a busy store
            st.error(f"Not deleted: {e}")
            return
        st.session_state[asked] = False
        st.session_state[DELETED] = (
            f"Deleted campaign {_named(cid, name)}: {done['rows']:,} rows of the store and "
            f"{done['files']:,} files ({size_text(done['bytes'])}) removed."
        )
        st.switch_page(CAMPAIGNS_PAGE)


def say_deleted() -> None:
    """On the Campaigns page: the message of a delete just done, once."""
    if said := st.session_state.pop(DELETED, None):
        st.success(said, icon=":material/delete:")
        st.toast(said)
