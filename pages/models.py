"""Models: the zoo with its cards, and the inference-time table."""

import json

import pandas as pd
import streamlit as st

from engine import zoo

st.title("Models")
cards = zoo.list_cards()
if not cards:
    st.info("The zoo is empty: `make models` trains the default MNIST models.")
    st.stop()
rows = []
for c in cards:
    m, inf = c.get("metrics", {}), c.get("inference", {})
    rows.append({
        "name": c["name"], "kind": c["kind"], "dataset": c["dataset"],
        "family": c.get("family") or c.get("architecture"),
        "latent size": int(pd.Series(c["latent_shape"]).prod()) if "latent_shape" in c else None,
        "parameters": c["parameters"],
        "accuracy": m.get("test_accuracy"), "viability": m.get("viability"),
        "ms/image b1": inf.get("ms_per_image_b1"), "ms/image b25": inf.get("ms_per_image_b25"),
        "trained with": c["training"]["command"],
    })  # fmt: skip
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
st.caption(
    "Accuracy: held-out test images. Viability: share of seeds the default classifier "
    "labels as intended. Times: `latentfuzz bench generators` on this machine's CPU."
)
for c in cards:
    with st.expander(f"{c['name']} card"):
        st.code(json.dumps(c, indent=2), language="json")
