"""AppTest of the New campaign page (pages/new_campaign.py): the models it offers, what it
launches (differential, class-escape, targeted, an imported classifier), and its form:
limits, every invalid field named in a sentence, a confirmation before a long campaign,
and each strategy's parameters built from its model."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
import yaml
from streamlit.testing.v1 import AppTest

from dashboard.form_check import limits, problems
from dashboard.param_form import allowed, label
from engine.campaign.config import CampaignConfig
from engine.core import home as home_module
from engine.models.importing import import_classifier
from engine.search.strategies import STRATEGIES
from tests.engine.classifiers.test_onnx import Net, export
from tests.helpers import page_opener

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")


def test_new_campaign_page_offers_only_compatible_models(app):
    at = app("new_campaign.py")
    assert not at.exception
    assert at.selectbox[0].options == ["mnist"]
    assert at.selectbox[1].options == ["mnist-vae", "mnist-gan", "mnist-dm"]
    assert "mnist-convnet" in at.selectbox[2].options


def test_invalid_combination_is_not_launched(app, seeded, monkeypatch):
    launched = []
    monkeypatch.setattr("dashboard.launch.subprocess.Popen", lambda *a, **k: launched.append(a))
    at = app("new_campaign.py")
    at.number_input[2].set_value(10)  # population
    at.number_input[3].set_value(10)  # best_left = population: no children
    at.button[0].click().run()
    assert not at.exception
    text = at.error[0].value.replace("\\", "")  # the sentences are escaped Markdown
    assert "Elites = 10 must be smaller than Population = 10" in text
    assert launched == []


def test_valid_campaign_is_launched_in_another_process(app, monkeypatch):
    launched = []
    monkeypatch.setattr(
        "dashboard.launch.subprocess.Popen", lambda args, **k: launched.append((args, k))
    )
    at = app("new_campaign.py")
    at.number_input[0].set_value(2)
    next(n for n in at.number_input if n.label == "Initial step").set_value(0.5)
    at.button[0].click().run()
    assert not at.exception, at.exception
    ((args, kwargs),) = launched
    assert args[1:4] == ["-m", "engine.entry", "run"] and kwargs["start_new_session"]
    cid = args[args.index("--id") + 1]
    assert at.query_params["id"] == [cid] or at.query_params["id"] == cid
    cfg = yaml.safe_load(Path(args[args.index("--config") + 1]).read_text())
    assert cfg["seeds"] == 2 and cfg["strategy"] == "ga"
    assert cfg["strategy_params"]["init_step"] == 0.5


def test_new_campaign_offers_each_dataset_with_its_own_models(pets_app):
    at = pets_app("new_campaign.py")
    assert not at.exception
    assert {"mnist", "pets"} <= set(at.selectbox[0].options)
    at.selectbox[0].set_value("pets").run()
    assert not at.exception
    assert at.selectbox[1].options == ["old-vae (yours)", "pets-vae (yours)"]
    assert set(at.selectbox[2].options) == {
        "old-convnet (yours)",
        "pets-convnet (yours)",
        "upload a TorchScript or ONNX file…",
    }
    assert "3 x 32 x 32 images, 3 classes" in [c.value for c in at.caption]
    at.selectbox[1].set_value("pets-vae").run()
    at.selectbox[2].set_value("pets-convnet").run()
    assert not at.error and not at.button[0].disabled
    at.selectbox[2].set_value("old-convnet").run()
    (err,) = at.error
    assert "0000000000000000" in err.value and "latentfuzz train classifier --dataset pets" in (
        err.value.replace("\\", "")
    )
    assert at.button[0].disabled


def test_new_campaign_offers_and_launches_an_imported_onnx_classifier(
    home: Path, tmp_path: Path, monkeypatch
):
    monkeypatch.setattr(home_module, "_current", home)
    import_classifier(export(Net(), tmp_path / "mine.onnx"), "mnist", "my-onnx")
    at = page_opener(home, monkeypatch)("new_campaign.py")
    choice = next(s for s in at.selectbox if s.label == "Classifier under test")
    assert {"mnist-convnet", "my-onnx (yours)"} <= set(choice.options)  # marked as yours
    choice.set_value("my-onnx").run()
    launched = []
    monkeypatch.setattr(
        "dashboard.launch.subprocess.Popen", lambda args, **k: launched.append(args)
    )
    at.number_input[0].set_value(2)  # seeds
    at.button[0].click().run()
    assert not at.exception and not at.error, at.error
    (args,) = launched  # the engine's checks loaded the ONNX model before launching
    cfg = yaml.safe_load(Path(args[args.index("--config") + 1]).read_text())
    assert cfg["classifier"] == "my-onnx"


def test_new_campaign_launches_a_differential_campaign(diffed_app, monkeypatch):
    at = diffed_app("new_campaign.py")
    next(s for s in at.selectbox if s.label == "Generator").set_value("mnist-gan").run()
    second = next(s for s in at.selectbox if s.label.startswith("Second classifier"))
    assert "mnist-convnet" not in second.options  # never the classifier under test itself
    second.set_value("mnist-convnet-pruned80").run()
    next(s for s in at.selectbox if s.label == "Search strategy").set_value("nsga2").run()
    objective = next(r for r in at.radio if r.label == "Objective")
    assert objective.value == "default (divergence)"
    launched = []
    monkeypatch.setattr(
        "dashboard.launch.subprocess.Popen", lambda args, **k: launched.append(args)
    )
    at.button[0].click().run()
    assert not at.exception and not at.error, at.error
    (args,) = launched
    cfg = yaml.safe_load(Path(args[args.index("--config") + 1]).read_text())
    assert cfg["classifier_b"] == "mnist-convnet-pruned80" and cfg["strategy"] == "nsga2"


def _launched(at, monkeypatch) -> dict:
    launched = []
    monkeypatch.setattr(
        "dashboard.launch.subprocess.Popen", lambda args, **k: launched.append(args)
    )
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert not at.error, at.error[0].value
    (args,) = launched
    return yaml.safe_load(Path(args[args.index("--config") + 1]).read_text())


def test_escape_objective_launches_every_pair_without_a_seed_count(escaped_app, monkeypatch):
    at = escaped_app("new_campaign.py")
    objective = next(r for r in at.radio if r.label == "Objective")
    objective.set_value("class-escape matrix: SINVAD's Eq. 4, every class pair").run()
    assert not any(n.label == "Seeds" for n in at.number_input)
    next(n for n in at.number_input if n.label == "Searches per class pair").set_value(2)
    cfg = _launched(at, monkeypatch)
    assert cfg["escape_per_pair"] == 2 and cfg["seeds"] == 2 * 10 * 9
    assert cfg["target"] is None


def test_targeted_objective_asks_for_the_class_to_reach(escaped_app, monkeypatch):
    at = escaped_app("new_campaign.py")
    next(r for r in at.radio if r.label == "Objective").set_value("targeted: reach one class").run()
    next(s for s in at.selectbox if s.label == "Class to reach").set_value("7")
    next(s for s in at.selectbox if s.label == "Seed class").set_value("1")
    cfg = _launched(at, monkeypatch)
    assert cfg["fitness"] == "targeted" and cfg["target"] == 7 and cfg["target_class"] == 1
    assert cfg["escape_per_pair"] is None


@pytest.fixture
def form(tmp_path, monkeypatch):
    """The New campaign page on an empty home; what it launches is in `form.launched`."""
    monkeypatch.setenv("LATENTFUZZ_HOME", str(tmp_path))
    st.cache_resource.clear()
    launched = []
    monkeypatch.setattr("dashboard.launch.subprocess.Popen", lambda a, **k: launched.append(a))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("../pages/new_campaign.py")
    at.launched = launched
    return at.run()


def number(at: AppTest, label: str):
    return next(n for n in at.number_input if n.label == label)


def launch_button(at: AppTest):
    return next(b for b in at.button if b.label == "Launch")


def test_seed_fields_say_their_limits_from_the_campaign_model(form):
    seeds = number(form, "Seeds")
    assert seeds.help == "From 1 to 100,000."  # CampaignConfig.seeds: ge=1, le=100_000
    assert number(form, "Random seed").help == f"At least 0 and less than {2**63:,}."
    assert limits(CampaignConfig, "seed")["max_value"] == 2**53 - 1  # the browser's limit


def test_out_of_model_values_are_named_at_launch_with_what_was_entered(form):
    """Streamlit's own min/max refused a typed 0 without a word (a red box, the reason in
    a tooltip) and Launch did nothing: the model's bounds are checked at Launch."""
    number(form, "Seeds").set_value(0)
    number(form, "Random seed").set_value(-1)
    launch_button(form).click().run()
    text = form.error[0].value.replace("\\", "")
    assert text.startswith("Cannot launch; please fix:")
    assert "Seeds must be at least 1 (you entered 0)." in text
    assert "Random seed must be at least 0 (you entered -1)." in text
    assert form.launched == []
    sentences = problems(
        CampaignConfig,
        {"seeds": 0, "seed": -1, "name": "x" * 201},
        {"seeds": "Seeds", "seed": "Random seed"},
    )
    assert sentences == [
        "Name must be at most 200 characters (it has 201).",
        "Seeds must be at least 1 (you entered 0).",
        "Random seed must be at least 0 (you entered -1).",
    ]


def test_a_cross_field_rule_reads_as_a_sentence(form):
    number(form, "Population").set_value(5)
    launch_button(form).click().run()
    (err,) = form.error
    text = err.value.replace("\\", "")
    assert text.startswith("Cannot launch; please fix:")
    # Named as the form labels them (it said "best_left=10 ... population=5"; the GA's
    # best_left is now elites, labelled Elites).
    assert "Elites = 10 must be smaller than Population = 5" in text
    assert "Value error" not in text and "strategy_params" not in text
    assert form.launched == []


def test_a_seed_count_the_dataset_cannot_give_is_refused_before_any_question(form):
    number(form, "Seeds").set_value(100_000)
    launch_button(form).click().run()
    assert not form.warning and form.launched == []
    assert "ask for at most 1,000" in form.error[0].value


def test_a_long_campaign_asks_for_confirmation_with_its_estimate(form):
    number(form, "Seeds").set_value(1000)
    number(form, "Generations").set_value(100_000)
    launch_button(form).click().run()
    assert not form.exception and form.launched == []
    (warn,) = form.warning
    assert "projected to take about" in warn.value and "1,000 seeds" in warn.value
    go = next(b for b in form.button if b.key == "confirm")
    go.click().run()
    assert len(form.launched) == 1


def test_a_short_campaign_launches_without_asking(form):
    number(form, "Seeds").set_value(3)
    launch_button(form).click().run()
    assert not form.warning and len(form.launched) == 1


@pytest.fixture
def blank_form(tmp_path, monkeypatch):
    """The New campaign page on an empty home."""
    monkeypatch.setenv("LATENTFUZZ_HOME", str(tmp_path))
    st.cache_resource.clear()
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("../pages/new_campaign.py")
    return at.run()


def strategy_box(at: AppTest):
    return next(s for s in at.selectbox if s.label == "Search strategy")


@pytest.mark.parametrize("name", STRATEGIES.names())
def test_every_field_of_every_strategy_has_a_widget_with_its_bounds(blank_form, name):
    strategy_box(blank_form).set_value(name).run()
    assert not blank_form.exception, blank_form.exception
    Params = STRATEGIES.get(name).Params
    widgets = {
        w.label: w
        for kind in ("number_input", "selectbox", "checkbox")
        for w in blank_form.get(kind)
    }
    for field, info in Params.model_fields.items():
        w = widgets[label(field, info)]
        if w.type == "number_input":
            # The bounds are said in the help and checked at Launch (a widget bound
            # refused a typed value without a word).
            assert w.value == info.default  # None: an empty box that says "default"
            if info.default is None:
                assert w.proto.placeholder == "default"
            if rng := allowed(info):  # None: the field has no bound
                assert f"({rng})" in w.help
        assert w.help is None or (info.description or "") in w.help
    # The GIFTbench preset radio only for strategies with a step preset.
    presets = [r for r in blank_form.radio if r.label == "Settings"]
    assert bool(presets) == ("perturbation" in Params.model_fields)


def test_a_sinvad_campaign_is_launched_with_its_own_parameters(blank_form, monkeypatch):
    launched = []
    monkeypatch.setattr(
        "dashboard.launch.subprocess.Popen", lambda args, **k: launched.append(args)
    )
    strategy_box(blank_form).set_value("sinvad").run()
    next(n for n in blank_form.number_input if n.label == "Mask p").set_value(0.3)
    next(n for n in blank_form.number_input if n.label == "Generations").set_value(40)
    blank_form.button[0].click().run()
    assert not blank_form.exception, blank_form.exception
    (args,) = launched
    cfg = yaml.safe_load(Path(args[args.index("--config") + 1]).read_text())
    assert cfg["strategy"] == "sinvad"
    assert cfg["strategy_params"]["mask_p"] == 0.3
    assert cfg["strategy_params"]["generations"] == 40
    assert "best_left" not in cfg["strategy_params"]


def test_an_out_of_model_combination_is_refused_on_the_page(blank_form, monkeypatch):
    launched = []
    monkeypatch.setattr("dashboard.launch.subprocess.Popen", lambda *a, **k: launched.append(a))
    strategy_box(blank_form).set_value("sinvad").run()
    next(n for n in blank_form.number_input if n.label == "Population").set_value(10)
    next(n for n in blank_form.number_input if n.label == "Elites").set_value(10)
    blank_form.button[0].click().run()
    said = blank_form.error[0].value.replace("\\", "")
    assert "Elites = 10 must be smaller than Population = 10" in said
    assert launched == []


def test_the_strategy_picker_says_what_each_strategy_is(blank_form):
    # The picker offered bare ids ("interpolate", "nsga2"): Argus and DiffGAN were only
    # in its help text.
    box = strategy_box(blank_form)
    shown = dict(zip(STRATEGIES.names(), box.options, strict=True))
    assert shown["interpolate"].startswith("interpolate: Argus")
    assert shown["nsga2"].startswith("nsga2: NSGA-II") and "DiffGAN" in shown["nsga2"]
    assert shown["ga"].startswith("ga: GIFTbench") and shown["sinvad"].startswith("sinvad: SINVAD")
    assert all(words.startswith(f"{n}: ") for n, words in shown.items())
    assert box.value == "ga"
