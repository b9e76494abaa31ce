"""Fixtures the page tests share: homes holding one kind of campaign (or study) each,
built once per test module, and openers of the app's pages served on them."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import engine.core.home
from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.datasets import get_dataset
from engine.datasets.specs import make_spec, save_spec
from engine.labelling.validity import StudyConfig, create_study
from engine.studies.strategy import run_strategy_study
from store import Store
from tests.helpers import page_opener
from tests.tiny_data import save_tiny_models, write_folder

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> tuple[Path, str]:
    """A finished campaign: 4 seeds, up to 30 generations."""
    home = tmp_path_factory.mktemp("home")
    cfg = parse_config({"seeds": 4, "seed": 1, "strategy_params": {"generations": 30}})
    return home, run_campaign(cfg, home).campaign_id


@pytest.fixture
def app(seeded, monkeypatch):
    """open(page, **query): an AppTest of the page, served on `seeded`'s home."""
    return page_opener(seeded[0], monkeypatch)


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> tuple[Path, str]:
    """A campaign stopped mid-search: its searching seeds have no outcome."""
    home = tmp_path_factory.mktemp("home")
    cfg = {"seeds": 3, "seed": 1, "name": "paren (test) [x]", "strategy_params": {"generations": 5}}
    cid = run_campaign(parse_config(cfg), home).campaign_id
    with Store(home / "latentfuzz.duckdb").write() as con:
        con.execute("UPDATE campaigns SET status = 'interrupted' WHERE id = ?", [cid])
        con.execute(
            "UPDATE seeds SET status = 'interrupted', final_pred = NULL, iterations = NULL, "
            "misclassified = NULL, result_image = NULL WHERE campaign_id = ? AND viable",
            [cid],
        )
    return home, cid


@pytest.fixture
def stopped_app(stopped, monkeypatch):
    """open(page, **query), served on `stopped`'s home."""
    return page_opener(stopped[0], monkeypatch)


@pytest.fixture(scope="module")
def two(tmp_path_factory) -> tuple[Path, list[str]]:
    """Two finished campaigns named "first" and "second" (2 seeds, 5 generations)."""
    home = tmp_path_factory.mktemp("home")
    cfg = {"seeds": 2, "seed": 1, "strategy_params": {"generations": 5}}
    return home, [
        run_campaign(parse_config({**cfg, "name": n}), home).campaign_id
        for n in ("first", "second")
    ]


@pytest.fixture(scope="module")
def two_ab(tmp_path_factory) -> tuple[Path, list[str]]:
    """Two finished campaigns named "a" and "b" (3 seeds, 20 generations)."""
    home = tmp_path_factory.mktemp("home")
    cfg = {"seeds": 3, "seed": 1, "strategy_params": {"generations": 20}}
    return home, [
        run_campaign(parse_config({**cfg, "name": n}), home).campaign_id for n in ("a", "b")
    ]


@pytest.fixture(scope="module")
def diffed(tmp_path_factory) -> tuple[Path, str]:
    """A differential campaign on the GAN: mnist-convnet (A) against mnist-lenet5 (B), NSGA-II."""
    home = tmp_path_factory.mktemp("home")
    cfg = parse_config(
        {
            "generator": "gan",
            "classifier": "convnet",
            "classifier_b": "lenet5",
            "strategy": "nsga2",
            "seeds": 2,
            "seed": 1,
            # seed-noise: N(0, I) draws reach odd images, some of them invalid (the page's
            # "valid only" toggle needs some); DiffGAN's U[-1, 1] draws found 6, all valid.
            "strategy_params": {
                "generations": 4,
                "population": 16,
                "cluster_every": 2,
                "init": "seed-noise",
            },
        }
    )
    return home, run_campaign(cfg, home).campaign_id


@pytest.fixture
def diffed_app(diffed, monkeypatch):
    """open(page, **query), served on `diffed`'s home."""
    return page_opener(diffed[0], monkeypatch)


@pytest.fixture(scope="module")
def escaped(tmp_path_factory) -> tuple[Path, str]:
    """A class-escape campaign: one targeted search per class pair."""
    home = tmp_path_factory.mktemp("home")
    cfg = parse_config(
        {"escape_per_pair": 1, "target_class": 2, "seed": 1, "strategy_params": {"generations": 20}}
    )
    return home, run_campaign(cfg, home).campaign_id


@pytest.fixture
def escaped_app(escaped, monkeypatch):
    """open(page, **query), served on `escaped`'s home."""
    return page_opener(escaped[0], monkeypatch)


@pytest.fixture(scope="module")
def strategy_study(tmp_path_factory) -> tuple[Path, list[str]]:
    """A strategy study: a GA and a SINVAD campaign (3 seeds, 4 generations)."""
    home = tmp_path_factory.mktemp("home")
    _, table = run_strategy_study(home, ["ga", "sinvad"], seeds=3, generations=4)
    return home, table["campaign"].tolist()


@pytest.fixture
def strategy_app(strategy_study, monkeypatch):
    """open(page, **query), served on `strategy_study`'s home."""
    return page_opener(strategy_study[0], monkeypatch)


@pytest.fixture
def pets_app(tmp_path: Path, monkeypatch):
    """A home with dataset `pets` (an image folder), its models, and `old-convnet`, a
    classifier trained on an earlier state of the folder."""
    home = tmp_path / "home"
    monkeypatch.setattr(engine.core.home, "_current", home)  # restored: pages resolve the home
    folder = write_folder(tmp_path / "imgs", rejects=False)
    save_spec(make_spec(name="pets", root=str(folder)))
    ds = get_dataset("pets")
    save_tiny_models(home / "models", "pets", ds.shape, 3, ds.fingerprint())
    save_tiny_models(home / "models", "pets", ds.shape, 3, "0" * 16, prefix="old")
    return page_opener(home, monkeypatch)


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> tuple[Path, str, str]:
    """(home, campaign, study): a validity study (k = 2) of a 5-seed campaign."""
    home = tmp_path_factory.mktemp("home")
    cfg = parse_config({"seeds": 5, "seed": 1, "strategy_params": {"generations": 40}})
    cid = run_campaign(cfg, home).campaign_id
    store = Store(home / "latentfuzz.duckdb")
    sid = create_study(store, home, StudyConfig(campaigns=[cid], gold_rate=0.2, k=2))
    return home, cid, sid


@pytest.fixture
def page(study, monkeypatch):
    """open(labeller): the Label page of `study`'s study; None: no name given yet."""
    home, _, sid = study
    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    st.cache_resource.clear()

    def open_as(labeller: str | None) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=60).run()
        at.switch_page("../pages/label.py")
        at.query_params["study"] = sid
        if labeller:
            at.query_params["labeller"] = labeller
        return at.run()

    return open_as
