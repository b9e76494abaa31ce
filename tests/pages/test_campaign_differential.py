"""AppTest of a differential campaign's Campaign page: figures, heatmap, split, Pareto front
with its generation slider, the triggering gallery with its filter toggle, and seeds
that read as disagreements."""

from __future__ import annotations

import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from store import Store
from store import differential as sd
from tests.helpers import page_opener


def test_the_differential_panel_shows_figures_heatmap_front_and_gallery(diffed_app, diffed):
    home, cid = diffed
    arch = sd.archive(Store(home / "latentfuzz.duckdb"), cid)
    assert len(arch) > 0 and (~arch["valid"]).any()  # the toggle has something to hide
    at = diffed_app("campaign.py", id=cid)
    assert not at.exception, at.exception
    assert any(s.value == "Differential testing" for s in at.subheader)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["triggering inputs"] == str(len(arch))
    assert metrics["valid (all filters)"] == str(int(arch["valid"].sum()))
    # DiffGAN's Shannon diversity beside the label-pair entropy, each in its unit.
    assert metrics["Shannon diversity"].endswith(" nats")
    assert metrics["label-pair entropy"].endswith(" bits")
    geo = next(m for m in at.metric if m.label == "geometric diversity")
    assert "draw(s)" in geo.help and "conv features" in geo.help
    gallery = next(e for e in at.expander if e.label.startswith("Triggering inputs"))
    assert gallery.label == f"Triggering inputs ({len(arch)})"
    captions = [c.value for c in gallery.caption]
    assert captions and "ssim-nearest" in captions[0] and "A **" in captions[0]
    # The filter toggle keeps only inputs every filter accepts.
    at.toggle[0].set_value(True).run()
    assert not at.exception, at.exception
    gallery = next(e for e in at.expander if e.label.startswith("Triggering inputs"))
    assert gallery.label == f"Triggering inputs ({int(arch['valid'].sum())})"
    # The Pareto front, with a generation slider; its legends in words, not false/true.
    import json

    front = next(
        json.loads(c.proto.spec)
        for c in at.get("vega_lite_chart")
        if "divergence vs diversity" in c.proto.spec
    )
    assert front["encoding"]["color"]["scale"]["domain"] == ["dominated", "on the front"]
    assert front["encoding"]["shape"]["field"] == "labels"  # "A ≠ B" / "A = B"
    slider = at.select_slider[0]
    assert slider.label == "Generation" and slider.value == 4
    slider.set_value(2).run()
    assert not at.exception, at.exception


def test_a_single_classifier_campaign_has_no_differential_panel(tmp_path, monkeypatch):
    cid = run_campaign(
        parse_config({"seeds": 2, "strategy_params": {"generations": 2}}), tmp_path
    ).campaign_id
    at = page_opener(tmp_path, monkeypatch)("campaign.py", id=cid)
    assert not at.exception
    assert not any(s.value == "Differential testing" for s in at.subheader)


def test_its_seeds_read_as_disagreements_and_a_misclassification_study_is_refused(
    diffed_app, diffed
):
    """Its failing seeds are inputs A and B label differently, often with A right: the
    gallery said "expected 5, predicted 5 (misclassified)", and `labels create` without
    --triggering built a misclassification study of non-failures."""
    from engine.core.errors import ConfigError
    from engine.labelling.validity import StudyConfig, create_study
    from store import campaigns as sc

    home, cid = diffed
    store = Store(home / "latentfuzz.duckdb")
    seeds = sc.seeds(store, cid)
    failing = seeds[seeds["status"] == "misclassified"]
    assert len(failing), seeds
    at = diffed_app("campaign.py", id=cid)
    captions = [c.value for c in at.caption if c.value.startswith("seed ")]
    assert captions and all(", A says **" in c and ", B says **" in c for c in captions)
    assert any(c.endswith("(they disagree)") for c in captions)
    # The gallery's counts and its status filter say so too, the link keeps the status.
    assert any(c.value.startswith(f"{len(failing)} A and B disagree") for c in at.caption)
    show = next(m for m in at.multiselect if m.label == "Show")
    assert "A and B disagree" in show.options and "misclassified" in show.value
    with pytest.raises(ConfigError, match=r"tests two classifiers against each .*\(--triggering\)"):
        create_study(store, home, StudyConfig(campaigns=[cid]))
    # A triggering-inputs study of a one-classifier campaign, or with seed images: both
    # were dropped without a word.
    plain = run_campaign(
        parse_config({"seeds": 3, "seed": 1, "strategy_params": {"generations": 30}}), home
    ).campaign_id
    with pytest.raises(ConfigError, match=rf"campaign {plain} tests one classifier"):
        create_study(store, home, StudyConfig(campaigns=[cid, plain], triggering=True))
    with pytest.raises(ValueError, match=r"triggering inputs \(--triggering\) has none"):
        StudyConfig(campaigns=[cid], triggering=True, seed_images=True)
    # The New study form starts from the newest one-classifier campaign, not a refusal.
    at = diffed_app("studies.py", tab="New study")
    form = next(m for m in at.multiselect if m.label == "Campaigns")
    assert form.value == [plain]


def test_the_ablations_page_says_it_has_no_diversity_objective(tmp_path, monkeypatch):
    cfg = {
        "generator": "gan",
        "classifier": "convnet",
        "classifier_b": "lenet5",
        "strategy": "nsga2",
        "seeds": 1,
        "seed": 1,
        "validators": {},
        "strategy_params": {"generations": 2, "population": 6, "objectives": "divergence"},
    }
    cid = run_campaign(parse_config(cfg), tmp_path).campaign_id
    at = page_opener(tmp_path, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    assert any("DiffGAN's ablation" in c.value for c in at.caption)
    assert not any(e.label.startswith("Pareto front") for e in at.expander)


#: The differential tiles, and what fits one at 1,280 px in a row of three (the page's
#: column is about 820 px there): six in a row cut them to "per 1,000 evaluati…" and
#: "0.69 …", the unit lost.
FIGURES = (
    "triggering inputs",
    "per 1,000 evaluations",
    "valid (all filters)",
    "geometric diversity",
    "Shannon diversity",
    "label-pair entropy",
)


def rows_of_tiles(node, found: list) -> list[list]:
    """Each st.columns row that holds metric tiles, as its columns' metrics."""
    children = list(getattr(node, "children", {}).values())
    cols = [c for c in children if getattr(c, "type", None) == "column"]
    if cols:
        found.append([[m for m in c.metric] for c in cols])
    for child in children:
        rows_of_tiles(child, found)
    return found


def test_the_differential_tiles_fit_and_say_what_geometric_diversity_is(diffed_app, diffed):
    _, cid = diffed
    at = diffed_app("campaign.py", id=cid)
    assert not at.exception, at.exception
    rows = [r for r in rows_of_tiles(at._tree, []) if any(m.label in FIGURES for c in r for m in c)]
    assert sorted(m.label for r in rows for c in r for m in c) == sorted(FIGURES)
    for row in rows:
        assert len(row) <= 3, [m.label for c in row for m in c]
        for (m,) in row:  # one tile a column, its label and value short enough to show whole
            assert len(m.label) <= 22 and len(m.value) <= 10, (m.label, m.value)
            assert m.help  # the full meaning, in the tile's help
    geo = next(m for m in at.metric if m.label == "geometric diversity")
    assert float(geo.value) < 0  # a log-determinant: its help says why that is normal
    for words in ("log-determinant", "Gram matrix", "negative values are normal", "Higher"):
        assert words in geo.help, geo.help
