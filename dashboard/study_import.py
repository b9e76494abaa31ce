"""The Validity studies page's import: a study file uploaded in the browser, imported as
`latentfuzz labels import` does (our own exports, or a crowd study's CSV with a mapping)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from pydantic import ValidationError

from dashboard.text import md_text
from dashboard.uploads import save_upload
from engine.datasets import DatasetError, dataset_names
from engine.errors import LatentfuzzError, cause
from store import Store


def import_form(store: Store, home: Path) -> str | None:
    """The form; the new study's id once one is imported, else None."""
    from engine.label_import import ImportMapping, import_csv

    st.subheader("Import a study file")
    st.caption(
        "A file from **Download one row per image** or **Download raw judgements** (of this "
        "or another home) comes back as the same study. A crowd study's CSV is read with the "
        "ICST header (`Image URL, ID, TOOL, MUT_EXT, Expected, ASS 1, ASS 2`, ...) or the "
        "columns a mapping file names (README, *Import a study run elsewhere*)."
    )
    with st.form("import_study", enter_to_submit=False):
        a, b = st.columns(2)
        up = a.file_uploader("Study CSV", type=["csv"])
        mapping = b.file_uploader("Mapping (YAML, optional)", type=["yaml", "yml"])
        c, d, e = st.columns(3)
        names = dataset_names()
        dataset = c.selectbox("Dataset its answers name", names,
                              index=names.index("mnist") if "mnist" in names else 0)  # fmt: skip
        name = d.text_input("Study name", "", placeholder="the exported study's, else the file's")
        again = e.checkbox("Import again if imported before",
                           help="as another study: pooled reports then count it twice")  # fmt: skip
        if not st.form_submit_button("Import"):
            return None
    if up is None:
        st.error("Choose a study CSV file first.")
        return None
    path = save_upload(home, up.name, up.getvalue())
    try:
        m = None
        if mapping is not None:
            m = ImportMapping.from_yaml(save_upload(home, mapping.name, mapping.getvalue()))
        res = import_csv(store, path, dataset, m, name or None, again=again, file_name=up.name)
    except ValidationError as err:
        st.error(f"Cannot use mapping {md_text(mapping.name)}: {md_text(cause(err))}")
        return None
    except (LatentfuzzError, DatasetError) as err:
        # The message names the stored copy, and the CLI's flags: the user knows the file
        # by its own name, and this form's fields.
        said = str(err)
        if said.startswith(str(path)):
            said = said[len(str(path)) :].lstrip(": ")
        said = said.replace(str(path), up.name)
        for flag, field in (
            ("pass --again", 'tick "Import again if imported before"'),
            ("Pass a mapping file (--mapping)", "Choose a mapping file"),
        ):
            said = said.replace(flag, field)
        st.error(f"Cannot import {md_text(up.name)}: {md_text(said)}")
        return None
    shape = f"a latentfuzz {res.shape} export" if res.shape else "a crowd study"
    st.success(
        f"Imported {md_text(up.name)} ({shape}) as {res.study_id}: {res.rows} images, "
        f"{res.judgements} answers" + (f", {res.adjudications} adjudications" if res.shape else "")
        + (f"; not in the file, assumed: {res.assumed}" if res.assumed else "")
    )  # fmt: skip
    if not res.disagreements.empty:
        st.warning(f"{len(res.disagreements)} verdicts in the file differ from ours:")
        st.dataframe(res.disagreements, hide_index=True)
    return res.study_id
