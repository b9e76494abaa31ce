"""The Validity studies page's import: a study file uploaded in the browser, imported as
`latentfuzz labels import` does (our own exports, or a crowd study's CSV with a mapping)."""

from __future__ import annotations

import re
from pathlib import Path

import streamlit as st
from pydantic import ValidationError

from dashboard.text import md_text
from dashboard.uploads import save_upload
from engine.api import DatasetError, LatentfuzzError, dataset_names
from store import Store

AUTO = "automatic"
ENCODINGS = [AUTO, "utf-8", "latin-1", "cp1252", "utf-16", "utf-16-le", "utf-16-be"]

#: The importer's words for the CLI's options, and this form's for the same thing.
FIELDS = [
    ("pass --again", 'tick "Import again if imported before"'),
    ("Pass a mapping file (--mapping)", "Choose a Mapping file"),
    ("in a mapping file (--mapping)", "in a Mapping file"),
    ("pass --encoding", "choose Encoding"),
    ("--encoding", "Encoding"),
    (
        "export the study with --wide (one row per image)",
        'download the study with "Download one row per image"',
    ),
    ("with --max-rows N", "with `latentfuzz labels import --max-rows N`"),
    ("--dataset", "Dataset"),
]


def for_the_page(said: str, path: Path) -> str:
    """An import error as this form's user reads it: without the stored copy's path (the
    message starts with the file it is about, and the user named it already) and with the
    form's fields where it names the CLI's options."""
    said = re.sub(rf"^{re.escape(str(path))}[,:] ", "", said)
    said = said.replace(str(path), "the file")
    for flag, field in FIELDS:
        said = said.replace(flag, field)
    return said


def import_form(store: Store, home: Path) -> str | None:
    """The form; the new study's id once one is imported, else None."""
    # Deferred (start-up time: loads scipy, pandas, pyarrow).
    from engine.api import ImportMapping, import_csv

    st.subheader("Import a study file")
    st.caption(
        "A file from **Download one row per image** or **Download raw judgements** (of this "
        "or another home) comes back as the same study. A crowd study's CSV is read with the "
        "ICST header (`Image URL, ID, TOOL, MUT_EXT, Expected, ASS 1, ASS 2`, ...) or the "
        "columns a mapping file names (the docs' Validity studies guide, *Import a study run "
        "elsewhere*)."
    )
    with st.form("import_study", enter_to_submit=False):
        a, b = st.columns(2)
        up = a.file_uploader("Study CSV", type=["csv"])
        mapping = b.file_uploader("Mapping (YAML, optional)", type=["yaml", "yml"])
        c, d, e = st.columns(3)
        names = dataset_names()
        dataset = c.selectbox(
            "Dataset its answers name", names, index=names.index("mnist") if "mnist" in names else 0
        )
        name = d.text_input("Study name", "", placeholder="the exported study's, else the file's")
        encoding = e.selectbox(
            "Encoding", ENCODINGS, help="of the CSV; automatic reads a byte-order mark, else UTF-8"
        )
        again = e.checkbox(
            "Import again if imported before",
            help="as another study: pooled reports then count it twice",
        )
        if not st.form_submit_button("Import"):
            return None
    if up is None:
        st.error("Choose a study CSV file first.")
        return None
    m = None
    if mapping is not None:
        mpath = save_upload(home, mapping.name, mapping.getvalue())
        try:
            m = ImportMapping.from_yaml(mpath)
        except ValidationError as err:
            said = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
            st.error(f"Cannot use mapping {md_text(mapping.name)}: {md_text(said)}")
            return None
        except LatentfuzzError as err:
            said = str(err).replace(f"mapping file {mpath}", "it")
            st.error(f"Cannot use mapping {md_text(mapping.name)}: {md_text(said)}")
            return None
    path = save_upload(home, up.name, up.getvalue())
    try:
        res = import_csv(
            store,
            path,
            dataset,
            m,
            name or None,
            again=again,
            encoding=None if encoding == AUTO else encoding,
            file_name=up.name,
        )
    except (LatentfuzzError, DatasetError) as err:
        st.error(f"Cannot import {md_text(up.name)}: {md_text(for_the_page(str(err), path))}")
        return None
    shape = f"a latentfuzz {res.shape} export" if res.shape else "a crowd study"
    st.success(
        f"Imported {md_text(up.name)} ({shape}) as {res.study_id}: {res.rows} images, "
        f"{res.judgements} answers"
        + (f", {res.adjudications} adjudications" if res.shape else "")
        + (f"; not in the file, assumed: {res.assumed}" if res.assumed else "")
    )
    if not res.disagreements.empty:
        st.warning(f"{len(res.disagreements)} verdicts in the file differ from ours:")
        st.dataframe(res.disagreements, hide_index=True)
    return res.study_id
