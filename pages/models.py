"""Models: the zoo at a glance, each model's card, samples per generator, and your own
models added (uploaded), renamed and deleted."""

import streamlit as st

from dashboard.data import get_home
from dashboard.models import (
    add_classifier,
    add_generator,
    card_facts,
    manage,
    measured,
    show_samples,
    uploaded,
    zoo_table,
)
from engine.api import DatasetError, chance_note, dataset_names, get_dataset, zoo

st.title("Models")
if flash := st.session_state.pop("models_flash", None):
    st.success(flash)
if note := st.session_state.pop("models_note", None):
    st.warning(note)  # added all the same: the user may know why
cards = zoo.list_cards()
if not cards:
    st.info(
        "No models yet: `make models` trains the default MNIST models; `latentfuzz train "
        "classifier --dataset NAME` trains yours into $LATENTFUZZ_HOME/models."
    )
else:
    st.dataframe(zoo_table(cards), hide_index=True, width="stretch")
    st.caption(
        "Test accuracy: held-out test images. Viable seeds: share of seeds the default "
        "classifier labels as intended. Times per image at batch 1 and 25: `latentfuzz bench "
        "generators` on this machine's CPU, or measured when the model was added; New "
        "campaign estimates a campaign's duration from them."
    )
for c in cards:
    mine = not zoo.is_bundled(c["name"])
    title = f"{c['name']} · {c['kind']} · {c['dataset']}{' · yours' if mine else ''}"
    # ?model=NAME (the Repair section's link) opens that model's card.
    with st.expander(title, expanded=c["name"] == st.query_params.get("model")):
        st.markdown("\n".join(f"- **{k}**: {v}" for k, v in card_facts(c)))
        # On request: drawing loads the model (the DM imports diffusers), which made the
        # page's first run take 4 s when every generator drew at once.
        if c["kind"] == "generator" and st.toggle("Show samples", key=f"samples-{c['name']}"):
            show_samples(c["name"])
        if mine:
            manage(st, c["name"])

st.subheader("Add your model")
st.caption(
    "An uploaded model is checked, measured and added to your models, as `latentfuzz models "
    "import` does: every picker on New campaign then offers it by its name."
)
a, b = st.columns(2)
kind = a.radio("Kind", ["classifier", "generator"], horizontal=True)
names = dataset_names()
dataset = b.selectbox("Dataset", names, index=names.index("mnist") if "mnist" in names else 0)
if kind == "classifier":
    card = add_classifier(st, dataset, key="add-classifier")
else:
    try:
        classes = get_dataset(dataset).num_classes
    except DatasetError as e:
        st.error(f"Dataset {dataset} cannot be read: {e}")
        st.stop()
    card = add_generator(st, dataset, classes, key="add-generator")
if card is not None:
    st.session_state["models_flash"] = f"Added {card['name']} ({measured(card)})."
    st.session_state["models_note"] = chance_note(card)
    st.rerun()

up = uploaded(get_home())
if not up.empty:  # before uploads became models, New campaign kept them as files
    st.subheader("Earlier uploads")
    st.caption(
        "Files uploaded before uploads became models; campaigns that used them read them "
        "from there. Add one above to pick it by name."
    )
    st.dataframe(up, hide_index=True, width="stretch")
