"""New campaign: pick dataset, generator, classifier and search settings, then launch."""

from pathlib import Path

import streamlit as st

from dashboard.data import get_home
from dashboard.launch import launch
from dashboard.uploads import save_upload
from engine import zoo
from engine.classifiers import load_torchscript
from engine.config import format_validation, parse_config
from engine.datasets import get_dataset
from engine.errors import ConfigError, ModelError
from engine.strategies import STRATEGIES
from engine.strategies.ga import PRESETS
from engine.study import bundled_generators

st.title("New campaign")
home = get_home()
cards = zoo.list_cards()
datasets = sorted({c["dataset"] for c in cards if c["kind"] == "generator"})
if not datasets:
    st.error("The model zoo has no generator. Train one with `latentfuzz train vae`.")
    st.stop()

left, mid, right = st.columns(3)
dataset = left.selectbox("Dataset", datasets)
ds = get_dataset(dataset)
generator = mid.selectbox(
    "Generator", bundled_generators(dataset), help="only generators trained on this dataset"
)
zoo_classifiers = [
    c["name"] for c in cards if c["kind"] == "classifier" and c["dataset"] == dataset
]
UPLOAD = "upload a TorchScript file…"
choice = right.selectbox("Classifier under test", [*zoo_classifiers, UPLOAD])
classifier, classifier_ok = choice, True
if choice == UPLOAD:
    up = right.file_uploader("TorchScript classifier (.pt)", type=["pt", "pth", "ts"])
    classifier_ok = False
    if up is not None:
        data = up.getvalue()
        path = save_upload(home, up.name, data)  # a safe base name, inside the home
        try:
            load_torchscript(path, ds.shape, ds.num_classes, dataset)
            right.success(f"{up.name}: valid for {dataset}")
            classifier, classifier_ok = str(path), True
        except ModelError as e:
            right.error(str(e))

PRESET_SETTINGS = {
    "strong (default)": {"perturbation": "strong"},
    "ICST, low perturbation": {"perturbation": "low"},
    "ICST, high perturbation": {"perturbation": "high"},
}
preset = st.radio(
    "Settings",
    list(PRESET_SETTINGS),
    horizontal=True,
    help="ICST presets reproduce the study: population 25, best_left 10, "
    "250 generations, GIFTbench step sizes",
)
with st.form("campaign"):
    strategy = st.selectbox(
        "Search strategy",
        STRATEGIES.names(),
        help="ga: GIFTbench's genetic algorithm, defects fixed",
    )
    a, b, c, d = st.columns(4)
    seeds = a.number_input("Seeds", 1, 10_000, 10)
    generations = b.number_input("Generations", 1, 100_000, 250)
    population = c.number_input("Population", 2, 10_000, 25)
    best_left = d.number_input("best_left (elites)", 2, 9_999, 10)
    e, f, f2, g, h = st.columns(5)
    perturbation = e.selectbox(
        "Step preset",
        [*PRESETS, "custom"],
        index=[*PRESETS, "custom"].index(PRESET_SETTINGS[preset]["perturbation"]),
    )
    step = f.number_input(
        "Custom step", 0.0, 100.0, 0.05, format="%.5f", help="used when the step preset is custom"
    )
    init_step = f2.number_input(
        "Initial step",
        0.0,
        100.0,
        0.0,
        format="%.5f",
        help="spread of the first population; 0 means 2 x step",
    )
    target = g.selectbox("Target class", ["any", *ds.class_names])
    seed = h.number_input("Random seed", 0, 2**31 - 1, 0)
    reset_to = st.radio(
        "After an improvement the step returns to",
        ["the preset's rule", "initial", "step"],
        horizontal=True,
        help="initial: 2 x step, as GIFTbench (the rule of low and high); step: the step "
        "itself (the rule of strong and custom)",
    )
    gen_params = {}
    card_params = zoo.load_card(generator)["params"]
    if "guidance" in card_params:  # a diffusion model: seeds and search may differ
        gl, gr = st.columns(2)
        gen_params["seed_guidance"] = gl.number_input(
            "Guidance for seed images", 0.0, 20.0,
            float(card_params.get("seed_guidance") or card_params["guidance"]),
            help="GIFTbench: 3.5; the default is the zoo card's measured best",
        )  # fmt: skip
        gen_params["guidance"] = gr.number_input(
            "Guidance during the search", 0.0, 20.0, float(card_params["guidance"]),
            help="GIFTbench: 1.4; the default is the zoo card's measured best",
        )  # fmt: skip
    name = st.text_input("Name (optional)")
    submitted = st.form_submit_button("Launch", type="primary", disabled=not classifier_ok)

if submitted:
    raw = {
        "dataset": dataset, "generator": generator, "classifier": classifier,
        "seeds": int(seeds), "seed": int(seed), "name": name or None, "strategy": strategy,
        "target_class": None if target == "any" else ds.class_names.index(target),
        "strategy_params": {"generations": int(generations), "population": int(population),
                            "best_left": int(best_left), "perturbation": perturbation,
                            **({"step": float(step)} if perturbation == "custom" else {}),
                            **({"init_step": float(init_step)} if init_step > 0 else {}),
                            **({"reset_to": reset_to} if reset_to in ("initial", "step")
                               else {})},
        "generator_params": gen_params,
    }  # fmt: skip
    try:
        cid = launch(parse_config(raw), home)
    except ConfigError as err:
        st.error(f"Cannot launch: {err}")
    except Exception as err:  # noqa: BLE001 - pydantic errors from a widget are shown too
        st.error(f"Cannot launch: {format_validation(err) if hasattr(err, 'errors') else err}")
    else:
        st.switch_page(Path(__file__).with_name("campaign.py"), query_params={"id": cid})
