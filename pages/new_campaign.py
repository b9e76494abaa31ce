"""New campaign: pick dataset, generator, classifier and search settings, then launch."""

from pathlib import Path

import streamlit as st

from dashboard.data import get_home
from dashboard.form_check import (
    CONFIRM_SECONDS,
    choice_problems,
    duration,
    in_words,
    limits,
    problems,
    projected_seconds,
    strategy_words,
)
from dashboard.launch import launch
from dashboard.models import add_classifier, measured
from dashboard.param_form import label, param_form
from dashboard.text import md_text
from engine.api import (
    STRATEGIES,
    CampaignConfig,
    ConfigError,
    DatasetError,
    bundled_generators,
    get_dataset,
    parse_config,
    resolve,
    zoo,
)

st.title("New campaign")
home = get_home()
cards = zoo.list_cards()
by_name = {c["name"]: c for c in cards}
# Datasets with a generator, bundled or the user's (`latentfuzz train ... --dataset NAME`).
datasets = sorted({c["dataset"] for c in cards if c["kind"] == "generator"})
if not datasets:
    st.error("No generator yet. Train one with `latentfuzz train vae --dataset NAME`.")
    st.stop()


def source(name: str) -> str:
    """A model as the pickers show it: user models are marked."""
    return name if name not in by_name or zoo.is_bundled(name) else f"{name} (yours)"


left, mid, right = st.columns(3)
dataset = left.selectbox("Dataset", datasets)
try:
    ds = get_dataset(dataset)
except DatasetError as e:
    st.error(f"Dataset {dataset} cannot be read: {e}")
    st.stop()
left.caption(f"{' x '.join(map(str, ds.shape))} images, {ds.num_classes} classes")
generator = mid.selectbox(
    "Generator",
    bundled_generators(dataset),
    format_func=source,
    help="only generators trained on this dataset",
)
classifiers = [c["name"] for c in cards if c["kind"] == "classifier" and c["dataset"] == dataset]
UPLOAD = "upload a TorchScript or ONNX file…"
# A classifier added on the last run: picked (set before its widget exists) and announced.
added = st.session_state.pop("added_classifier", None)
if added is not None:
    st.session_state["classifier"] = added[0]
if st.session_state.get("classifier") not in (*classifiers, UPLOAD):
    st.session_state.pop("classifier", None)  # another dataset's, or a deleted model
choice = right.selectbox(
    "Classifier under test", [*classifiers, UPLOAD], format_func=source, key="classifier"
)
classifier, classifier_ok = choice, choice != UPLOAD
if added is not None:
    right.success(added[1])
if choice == UPLOAD:
    # Added once as a model of the home, measured like `latentfuzz models import`: every
    # picker then offers it by name (classifier A or B), in this form and the next.
    card = add_classifier(right, dataset, key="add-classifier")
    if card is not None:
        st.session_state["added_classifier"] = (
            card["name"],
            f"Added {card['name']} to your models ({measured(card)}); every classifier "
            "picker offers it now.",
        )
        st.rerun()

second = right.selectbox(
    "Second classifier (differential testing)",
    ["none", *[c for c in classifiers if c != classifier]],
    format_func=source,
    help="classify every image with both and search where they disagree (DiffGAN); "
    "the objective becomes divergence and the campaign keeps every triggering input",
)
classifier_b = None if second == "none" else second
# A model trained on other data, or on images of another shape, is refused with the fix.
unfit = [
    why
    for n in (generator, classifier, classifier_b)
    if n in by_name and (why := zoo.incompatibility(by_name[n], ds)) is not None
]
for why in unfit:
    st.error(f"Cannot use this model: {why}")
classifier_ok = classifier_ok and not unfit

PRESET_SETTINGS = {
    "strong (default)": {"perturbation": "strong"},
    "ICST, low perturbation": {"perturbation": "low"},
    "ICST, high perturbation": {"perturbation": "high"},
}
strategy = st.selectbox(
    "Search strategy",
    STRATEGIES.names(),
    index=STRATEGIES.names().index("ga"),
    format_func=strategy_words,
    help="ga: GIFTbench's genetic algorithm, defects fixed; sinvad: SINVAD's boundary "
    "search; random: the equal-budget baseline; interpolate: Argus (needs a VAE); "
    "nsga2: DiffGAN's two-objective search (pick a second classifier)",
)
Params = STRATEGIES.get(strategy).Params
defaults, preset = {}, ""
if STRATEGIES.get(strategy).has_presets:
    preset = st.radio(
        "Settings",
        list(PRESET_SETTINGS),
        horizontal=True,
        help="ICST presets reproduce the study: population 25, elites 10, "
        "250 generations, GIFTbench step sizes",
    )
    defaults = PRESET_SETTINGS[preset]
    # A user's Generations 3000 went back to 250 on a click here, and the launch ran 250.
    st.caption(
        "Picking settings fills the search fields below (generations, population, "
        "step) with its values: change them after picking."
    )
OBJECTIVES = {
    f"default ({'divergence' if classifier_b else STRATEGIES.get(strategy).default_fitness})": {},
    "margin: any misclassification": {"fitness": "margin"},
    "targeted: reach one class": {"fitness": "targeted"},
    "boundary: the failing latent closest to the seed (SINVAD)": {"fitness": "boundary"},
    "class-escape matrix: SINVAD's Eq. 4, every class pair": {"escape": True},
}
objective = st.radio(
    "Objective",
    list(OBJECTIVES),
    horizontal=True,
    help="what the search minimises and when an input counts as failing",
)
chosen = OBJECTIVES[objective]
#: The form's label of each campaign setting, so that a refusal names what the user sees.
NAMES = {
    "seeds": "Seeds",
    "escape_per_pair": "Searches per class pair",
    "seed": "Random seed",
    "name": "Name",
    "target_class": "Seed class",
    "target": "Class to reach",
    "dataset": "Dataset",
    "generator": "Generator",
    "classifier": "Classifier under test",
    "classifier_b": "Second classifier",
    "strategy": "Search strategy",
    "fitness": "Objective",
    "criterion": "Objective",
    "seed_guidance": "Guidance for seed images",
    "guidance": "Guidance during the search",
}
# ...and each of the strategy's parameters, as its widget is labelled.
LABELS = {f: label(f, i) for f, i in Params.model_fields.items()} | NAMES

# Choices that cannot go together are said now, as the strategy and objective plug-ins
# judge them, not at Launch: Argus on a GAN, NSGA-II without a second classifier.
family = STRATEGIES.get(strategy).generator_family
clash = choice_problems(
    {
        "dataset": dataset,
        "generator": family or generator,
        "classifier": classifier if classifier_ok else None,
        "classifier_b": classifier_b,
        "strategy": strategy,
        "fitness": chosen.get("fitness"),
        "escape_per_pair": 1 if chosen.get("escape") else None,
    },
    None if family else by_name.get(generator),
    LABELS,
)
for why in clash:
    st.error(f"These choices cannot go together: {md_text(why)}")
classifier_ok = classifier_ok and not clash
# Enter in a number field only commits its value: with Streamlit's default it submitted the
# form, and a user typing the seed count launched a campaign with the other fields unset.
with st.form("campaign", enter_to_submit=False):
    objective_fields: dict = {}
    k = ds.num_classes
    if chosen.get("escape"):
        bounded = limits(CampaignConfig, "escape_per_pair")
        per_pair = st.number_input(
            "Searches per class pair",
            value=5,
            **{
                **bounded,
                "help": f"each source class seeds this many images, searched towards each of "
                f"the other {k - 1} classes (SINVAD's analysis); seeds = this x sources x "
                f"{k - 1}. {bounded['help'] or ''}",
            },
        )
        objective_fields["escape_per_pair"] = int(per_pair)
        seeds = None
    else:
        seeds = st.number_input("Seeds", value=10, **limits(CampaignConfig, "seeds"))
        objective_fields.update(chosen)
        if chosen.get("fitness") == "targeted":
            reach = st.selectbox("Class to reach", ds.class_names)
            objective_fields["target"] = ds.class_names.index(reach)
    # The strategy's own parameters, built from its model: a new strategy needs no code
    # here. The preset is part of the keys, so picking another preset resets the fields.
    strategy_params = param_form(st, Params, defaults, key=f"param.{strategy}.{preset}")
    b, c = st.columns(2)
    target = b.selectbox(
        "Seed class",
        ["any", *ds.class_names],
        help="seeds drawn from this class only (an escape matrix: this source row only)",
    )
    seed = c.number_input("Random seed", value=0, **limits(CampaignConfig, "seed"))
    gen_params = {}
    card_params = zoo.load_card(generator)["params"]
    if "guidance" in card_params:  # a diffusion model: seeds and search may differ
        gl, gr = st.columns(2)
        gen_params["seed_guidance"] = gl.number_input(
            "Guidance for seed images",
            0.0,
            20.0,
            float(card_params.get("seed_guidance") or card_params["guidance"]),
            help="GIFTbench: 3.5; the default is the zoo card's measured best",
        )
        gen_params["guidance"] = gr.number_input(
            "Guidance during the search",
            0.0,
            20.0,
            float(card_params["guidance"]),
            help="GIFTbench: 1.4; the default is the zoo card's measured best",
        )
    name = st.text_input("Name (optional)")
    submitted = st.form_submit_button("Launch", type="primary", disabled=not classifier_ok)
    if choice == UPLOAD:  # the other reasons Launch is off are said where they arise
        st.caption("Launch needs a classifier: add the file above, or choose a model.")


def start(cfg: CampaignConfig) -> None:
    """Launch a config the engine's checks passed (`resolve`, at Launch)."""
    cid = launch(cfg, home)
    st.session_state.pop("confirm_launch", None)
    st.switch_page(Path(__file__).with_name("campaign.py"), query_params={"id": cid})


if submitted:
    st.session_state.pop("confirm_launch", None)
    raw = {
        "dataset": dataset,
        # A pixel-space baseline searches its own generator, whatever the box shows.
        "generator": STRATEGIES.get(strategy).generator_family or generator,
        "classifier": classifier,
        "classifier_b": classifier_b,
        **({} if seeds is None else {"seeds": int(seeds)}),
        **objective_fields,
        "seed": int(seed),
        "name": name or None,
        "strategy": strategy,
        "target_class": None if target == "any" else ds.class_names.index(target),
        "strategy_params": strategy_params,
        "generator_params": gen_params,
    }
    wrong = problems(CampaignConfig, raw, NAMES) + problems(Params, strategy_params, {})
    if wrong:  # every invalid field at once, each named as its widget is
        st.error("Cannot launch; please fix:\n" + "\n".join(f"- {md_text(w)}" for w in wrong))
    else:
        try:  # the engine's own checks (seed pool, model fit) come before any question
            cfg = resolve(parse_config(raw)).config
            n = cfg.seeds
        except ConfigError as err:
            st.error(f"Cannot launch: {md_text(in_words(str(err), LABELS))}")
            n = None
        try:
            per_seed = STRATEGIES.get(strategy).budget(Params(**strategy_params))
        except (NotImplementedError, TypeError):
            per_seed = None
        cls_card = by_name.get(classifier)
        cost = per_seed and projected_seconds(
            n or 0, per_seed, [zoo.load_card(generator), cls_card]
        )
        if n is None:
            pass
        elif cost is not None and cost > CONFIRM_SECONDS:
            st.session_state["confirm_launch"] = (cfg, cost, n, per_seed)
        else:
            start(cfg)

if "confirm_launch" in st.session_state:
    cfg, cost, n, per_seed = st.session_state["confirm_launch"]
    st.warning(
        f"This campaign is projected to take about **{duration(cost)}**: {n:,} seeds x up to "
        f"{per_seed:,} evaluations each, at the models' measured time per image (their zoo "
        "cards). Launch it anyway?"
    )
    go, cancel = st.columns(2)
    if go.button(f"Launch anyway ({duration(cost)})", type="primary", key="confirm"):
        start(cfg)
    if cancel.button("Change the settings", key="cancel"):
        st.session_state.pop("confirm_launch")
        st.rerun()
