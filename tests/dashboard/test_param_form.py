"""AppTest: the New campaign page builds each strategy's parameter form from its model."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
import yaml
from streamlit.testing.v1 import AppTest

from dashboard.param_form import allowed, label
from engine.search.strategies import STRATEGIES

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")


@pytest.fixture
def page(tmp_path, monkeypatch):
    monkeypatch.setenv("LATENTFUZZ_HOME", str(tmp_path))
    st.cache_resource.clear()
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("../pages/new_campaign.py")
    return at.run()


def strategy_box(at: AppTest):
    return next(s for s in at.selectbox if s.label == "Search strategy")


@pytest.mark.parametrize("name", STRATEGIES.names())
def test_every_field_of_every_strategy_has_a_widget_with_its_bounds(page, name):
    strategy_box(page).set_value(name).run()
    assert not page.exception, page.exception
    Params = STRATEGIES.get(name).Params
    widgets = {w.label: w for kind in ("number_input", "selectbox", "checkbox")
               for w in page.get(kind)}  # fmt: skip
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
    presets = [r for r in page.radio if r.label == "Settings"]
    assert bool(presets) == ("perturbation" in Params.model_fields)


def test_a_range_says_which_bounds_are_exclusive():
    from pydantic import BaseModel, Field

    class P(BaseModel):
        n: int = Field(5, ge=1, le=100_000)
        step: float = Field(0.1, gt=0)
        decay: float = Field(0.5, gt=0, lt=1)
        seed: int = Field(0, ge=0)

    said = {k: allowed(i) for k, i in P.model_fields.items()}
    # "at least 0" for a step that must be more than 0 was refused at Launch.
    assert said == {"n": "from 1 to 100,000", "step": "more than 0",
                    "decay": "more than 0 and less than 1", "seed": "at least 0"}  # fmt: skip


def test_a_sinvad_campaign_is_launched_with_its_own_parameters(page, monkeypatch):
    launched = []
    monkeypatch.setattr(
        "dashboard.launch.subprocess.Popen", lambda args, **k: launched.append(args)
    )
    strategy_box(page).set_value("sinvad").run()
    next(n for n in page.number_input if n.label == "Mask p").set_value(0.3)
    next(n for n in page.number_input if n.label == "Generations").set_value(40)
    page.button[0].click().run()
    assert not page.exception, page.exception
    (args,) = launched
    cfg = yaml.safe_load(Path(args[args.index("--config") + 1]).read_text())
    assert cfg["strategy"] == "sinvad"
    assert cfg["strategy_params"]["mask_p"] == 0.3
    assert cfg["strategy_params"]["generations"] == 40
    assert "best_left" not in cfg["strategy_params"]


def test_an_out_of_model_combination_is_refused_on_the_page(page, monkeypatch):
    launched = []
    monkeypatch.setattr("dashboard.launch.subprocess.Popen", lambda *a, **k: launched.append(a))
    strategy_box(page).set_value("sinvad").run()
    next(n for n in page.number_input if n.label == "Population").set_value(10)
    next(n for n in page.number_input if n.label == "Elites").set_value(10)
    page.button[0].click().run()
    said = page.error[0].value.replace("\\", "")
    assert "Elites = 10 must be smaller than Population = 10" in said
    assert launched == []
