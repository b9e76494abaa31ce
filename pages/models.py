"""Models: the zoo at a glance, each model's card, samples per generator, uploads."""

import streamlit as st

from dashboard.data import get_home
from dashboard.models import card_facts, show_samples, uploaded, zoo_table
from engine.api import zoo

st.title("Models")
cards = zoo.list_cards()
if not cards:
    st.info(
        "No models yet: `make models` trains the default MNIST models; `latentfuzz train "
        "classifier --dataset NAME` trains yours into $LATENTFUZZ_HOME/models."
    )
    st.stop()
st.dataframe(zoo_table(cards), hide_index=True, width="stretch")
st.caption(
    "Test accuracy: held-out test images. Viable seeds: share of seeds the default "
    "classifier labels as intended. Times per image at batch 1 and 25: `latentfuzz bench "
    "generators` on this machine's CPU; New campaign estimates a campaign's duration from "
    "them."
)
for c in cards:
    mine = "" if zoo.is_bundled(c["name"]) else " · yours"
    with st.expander(f"{c['name']} · {c['kind']} · {c['dataset']}{mine}"):
        st.markdown("\n".join(f"- **{k}**: {v}" for k, v in card_facts(c)))
        # On request: drawing loads the model (the DM imports diffusers), which made the
        # page's first run take 4 s when every generator drew at once.
        if c["kind"] == "generator" and st.toggle("Show samples", key=f"samples-{c['name']}"):
            show_samples(c["name"])
st.subheader("Uploaded classifiers")
up = uploaded(get_home())
if up.empty:
    st.caption(
        "None yet: New campaign -> Classifier under test -> upload a TorchScript or ONNX file."
    )
else:
    st.dataframe(up, hide_index=True, width="stretch")
