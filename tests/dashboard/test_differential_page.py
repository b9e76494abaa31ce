"""AppTest: a differential campaign's page (figures, heatmap, split, Pareto front with its
generation slider, the triggering gallery with its filter toggle) and New campaign's
second-classifier picker."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from store import Store
from store import differential as sd
from tests.helpers import page_opener


@pytest.fixture(scope="module")
def diffed(tmp_path_factory) -> tuple[Path, str]:
    home = tmp_path_factory.mktemp("home")
    cfg = parse_config({
        "generator": "gan", "classifier": "convnet", "classifier_b": "lenet5",
        "strategy": "nsga2", "seeds": 2, "seed": 1,
        "strategy_params": {"generations": 4, "population": 16, "cluster_every": 2},
    })  # fmt: skip
    return home, run_campaign(cfg, home).campaign_id


@pytest.fixture
def app(diffed, monkeypatch):
    return page_opener(diffed[0], monkeypatch)


def test_the_differential_panel_shows_figures_heatmap_front_and_gallery(app, diffed):
    home, cid = diffed
    arch = sd.archive(Store(home / "latentfuzz.duckdb"), cid)
    assert len(arch) > 0 and (~arch["valid"]).any()  # the toggle has something to hide
    at = app("campaign.py", id=cid)
    assert not at.exception, at.exception
    assert any(s.value == "Differential testing" for s in at.subheader)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["triggering inputs"] == str(len(arch))
    assert metrics["valid (all filters)"] == str(int(arch["valid"].sum()))
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

    front = next(json.loads(c.proto.spec) for c in at.get("vega_lite_chart")
                 if "divergence vs diversity" in c.proto.spec)  # fmt: skip
    assert front["encoding"]["color"]["scale"]["domain"] == ["dominated", "on the front"]
    assert front["encoding"]["shape"]["field"] == "labels"  # "A ≠ B" / "A = B"
    slider = at.select_slider[0]
    assert slider.label == "Generation" and slider.value == 4
    slider.set_value(2).run()
    assert not at.exception, at.exception


def test_a_single_classifier_campaign_has_no_differential_panel(tmp_path, monkeypatch):
    cid = run_campaign(parse_config({"seeds": 2, "strategy_params": {"generations": 2}}),
                       tmp_path).campaign_id  # fmt: skip
    at = page_opener(tmp_path, monkeypatch)("campaign.py", id=cid)
    assert not at.exception
    assert not any(s.value == "Differential testing" for s in at.subheader)


def test_new_campaign_launches_a_differential_campaign(app, monkeypatch):
    at = app("new_campaign.py")
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


def test_compare_gives_differential_campaigns_their_own_columns(app, diffed):
    home, cid = diffed
    other = run_campaign(parse_config({"seeds": 2, "strategy_params": {"generations": 2}}),
                         home).campaign_id  # fmt: skip
    at = app("compare.py")
    at.multiselect[0].set_value([cid, other]).run()
    assert not at.exception, at.exception
    assert any(s.value == "Differential testing" for s in at.subheader)
    table = next(d.value for d in at.dataframe if "triggering" in d.value.columns)
    assert len(table) == 1 and table["B"].iloc[0] == "mnist-lenet5"
    figs = Store(home / "latentfuzz.duckdb").query(
        "SELECT differential FROM campaign_metrics WHERE campaign_id = ?", [cid]
    )
    assert table["triggering"].iloc[0] == yaml.safe_load(figs["differential"][0])["triggering"]
    # Its disagreements are not ranked against the other's misclassifications: two blocks.
    icst = at.markdown[0].value
    assert icst.count("**Block: ") == 2 and "failing: A and B disagree" in icst
    # Its seeds say both answers ("label 5 → 5" read as no failure at all).
    seeds = [c.value for c in at.caption if c.value.startswith("seed ")]
    assert any(" → A " in c and ", B " in c for c in seeds), seeds


def test_studies_page_says_which_classifier_people_agree_with(app, diffed):
    from datetime import datetime

    from engine.labelling import validity as labelling
    from store import judging
    from store import labels as ls

    home, cid = diffed
    store = Store(home / "latentfuzz.duckdb")
    cfg = labelling.StudyConfig(campaigns=[cid], k=1, gold_rate=0.0, triggering=True, sample=3,
                                name="who is right")  # fmt: skip
    sid = labelling.create_study(store, home, cfg)
    items = ls.items(store, sid).set_index("item_id")
    judging.join(store, sid, "ann")
    while (item := judging.next_item(store, sid, "ann")) is not None:
        judging.answer(store, sid, item, "ann", int(items.loc[item, "predicted_b"]), datetime.now())
    at = app("studies.py", study=sid)
    assert not at.exception, at.exception
    assert any(s.value == "Which classifier people agree with" for s in at.subheader)
    # Headed in words (they showed as humans_agree_a, humans_agree_neither, campaign_id).
    sides = next(d.value for d in at.dataframe if "B's label" in d.value.columns)
    assert sides["B's label"].tolist() == [3] and sides["A's label"].tolist() == [0]
    assert not [c for d in at.dataframe for c in d.value.columns if "_" in str(c)]
    # ... and so does `labels report` (it had validity and preservation only).
    import subprocess

    from tests.helpers import CLI

    env = {"LATENTFUZZ_HOME": str(home), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([*CLI, "labels", "report", sid], env=env, capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    row = next(line for line in out.splitlines() if cid in line)
    assert "the label people give" in out, out
    assert [c.strip() for c in row.split("│")[4:6]] == ["0", "3"], row


def test_its_seeds_read_as_disagreements_and_a_misclassification_study_is_refused(app, diffed):
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
    at = app("campaign.py", id=cid)
    captions = [c.value for c in at.caption if c.value.startswith("seed ")]
    assert captions and all(", A says **" in c and ", B says **" in c for c in captions)
    assert any(c.endswith("(they disagree)") for c in captions)
    # The gallery's counts and its status filter say so too, the link keeps the status.
    assert any(c.value.startswith(f"{len(failing)} A and B disagree") for c in at.caption)
    show = next(m for m in at.multiselect if m.label == "Show")
    assert "A and B disagree" in show.options and "misclassified" in show.value
    with pytest.raises(ConfigError, match="test two classifiers against each other.*--triggering"):
        create_study(store, home, StudyConfig(campaigns=[cid]))
    # A triggering-inputs study of a one-classifier campaign, or with seed images: both
    # were dropped without a word.
    plain = run_campaign(parse_config({"seeds": 3, "seed": 1, "strategy_params": {
        "generations": 30}}), home).campaign_id  # fmt: skip
    with pytest.raises(ConfigError, match=rf"\['{plain}'\] test one classifier"):
        create_study(store, home, StudyConfig(campaigns=[cid, plain], triggering=True))
    with pytest.raises(ValueError, match=r"triggering inputs \(--triggering\) has none"):
        StudyConfig(campaigns=[cid], triggering=True, seed_images=True)
    # The New study form starts from the newest one-classifier campaign, not a refusal.
    at = app("studies.py")
    form = next(m for m in at.multiselect if m.label == "Campaigns")
    assert form.value == [plain]


def test_lists_name_both_classifiers_of_a_differential_campaign(app, diffed):
    """The Campaigns page, `campaigns` and `show` said only A ("mnist-convnet"), so a
    differential campaign read as a plain one of A; and "misclassified 2" counted what
    were disagreements."""
    import subprocess

    from tests.helpers import CLI

    home, cid = diffed
    at = app("campaigns.py")
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    mine = table["open"].str.endswith(cid)
    assert list(table.loc[mine, "classifier"]) == ["mnist-convnet vs mnist-lenet5"]
    env = {"LATENTFUZZ_HOME": str(home), "PATH": "/usr/bin:/bin"}
    for args in (["campaigns"], ["show", cid]):
        out = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, check=True)
        assert "mnist-convnet vs mnist-lenet5" in out.stdout, out.stdout
        # Written to a pipe: as wide as its content, nothing cut to 80 columns with "…".
        assert "…" not in out.stdout and max(map(len, out.stdout.splitlines())) > 80
    # Its failing seeds are inputs A and B label differently, not A's misclassifications.
    shown = " ".join(out.stdout.split())
    assert "A and B disagree" in shown and "misclassified" not in shown, shown
    assert "final pred (A / B)" in shown  # `show`'s seeds give both answers
    page = app("campaign.py", id=cid)
    assert "A and B disagree" in [m.label for m in page.metric]
