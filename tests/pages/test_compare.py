"""AppTest of the Compare page (pages/compare.py): the ICST table and its marks, charts and
their colours, the selection in the URL, grids blocked by their axes, strategies,
metrics and differential campaigns."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from dashboard.palette import OKABE_ITO
from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.studies.grid import run_grid
from engine.studies.spec import parse_grid
from store import Store
from tests.helpers import page_opener
from tests.pages.charts import specs


def test_compare_page_shows_the_icst_table_for_two_campaigns(app, seeded):
    home, first = seeded
    cfg = parse_config(
        {"seeds": 4, "seed": 1, "strategy_params": {"generations": 30, "perturbation": "high"}}
    )
    second = run_campaign(cfg, home).campaign_id
    at = app("compare.py")
    assert not at.exception
    assert set(at.multiselect[0].value) >= {first, second}
    table = at.markdown[0].value
    assert table.startswith("**Block: mnist, ")
    assert "| campaign | generator | % viable seeds" in table
    assert "| iterations (ICST), mean (std) | iterations to failure, mean (std) |" in table
    assert "**" in table  # a best value in bold
    # The Summary tab opens: no chart or image is built or sent until its tab is opened
    # (Vega's code and the images were a third of a first load in a new browser).
    assert not at.get("vega_lite_chart") and not at.image
    assert "Fisher's exact test" in at.caption[0].value
    assert "blocks of equal dataset, perturbation and generation budget" in at.caption[0].value
    # Settings that differ: a Markdown table under the campaigns' names, no dataframe (the
    # grid's scripts, 1.2 MB, were loaded for it alone); a setting's name is never cut.
    settings = next(m.value for m in at.markdown if m.value.startswith("| setting |"))
    assert settings.endswith("| perturbation | high | strong |")  # the newest first
    assert not at.dataframe
    at.session_state["tab"] = "Convergence"
    at.run()
    assert len(at.get("vega_lite_chart")) >= 1 and not at.image
    # Results by seed: an image list per campaign (not elements per seed and campaign),
    # the same seeds in the same order in each, so a row's pairs sit side by side.
    at.session_state["tab"] = "Results by seed"
    at.run()
    assert not at.get("vega_lite_chart")
    imgs = at.image
    assert len(imgs) == 2
    rows = [[c.split(":")[0] for c in img.captions] for img in imgs]
    assert rows[0] == rows[1] == [f"seed {s}" for s in range(4)]
    # The Mann-Whitney samples are ICST iterations: every viable seed, survivors at 30.
    from dashboard.compare import campaign_rows
    from store import Store
    from store import campaigns as sc

    store = Store(home / "latentfuzz.duckdb")
    _, icst, failing = campaign_rows(store, [second])
    seeds = sc.seeds(store, second)
    viable = seeds[seeds["viable"]]
    assert sorted(icst[second]) == sorted(viable["iterations"].astype(float))
    survived = viable[~viable["misclassified"].astype(bool)]
    assert (survived["iterations"] == 30).all()
    assert len(failing[second]) == int(viable["misclassified"].sum())


def test_compare_marks_an_interrupted_campaign_and_leaves_it_out_of_the_marks(app, seeded):
    home, first = seeded

    def stop_at_3(p) -> None:
        if p.generation == 3:
            raise KeyboardInterrupt

    cfg = parse_config({"seeds": 4, "seed": 1, "strategy_params": {"generations": 30}})
    stopped = run_campaign(cfg, home, progress=stop_at_3)
    assert stopped.status == "interrupted"
    at = app("compare.py", id=[first, stopped.campaign_id])
    assert not at.exception
    table = at.markdown[0].value
    row = next(line for line in table.splitlines() if "*(interrupted)*" in line)
    assert "**" not in row and "<u>" not in row  # partial figures are never marked
    assert "not finished shows its status" in at.caption[0].value
    metrics = next(m.value for m in at.markdown if m.value.startswith("| campaign | strategy"))
    assert "*(interrupted)*" in metrics  # a row that says why it has no metrics
    # ... and so do the charts' legends.
    at.session_state["tab"] = "Convergence"
    at.run()
    spec = at.get("vega_lite_chart")[0].proto.spec
    assert f"{stopped.campaign_id} (interrupted)" in spec, spec[:2000]
    # The convergence legend's swatches are solid, not the bands' pale tint, and each
    # campaign has the same colour in both charts.
    import json

    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    assert specs[0]["config"]["legend"]["symbolOpacity"] == 1

    def domain(spec) -> list:
        layer = spec.get("layer", [spec])[0]
        return layer["encoding"]["color"]["scale"]["domain"]

    names = at.multiselect[0].value
    assert domain(specs[0]) == domain(specs[1])
    assert len(domain(specs[0])) == len(names) == 2
    # A seed the stopped campaign was still searching is not called "not viable".
    at.session_state["tab"] = "Results by seed"
    at.run()
    captions = seed_captions(at)
    assert any(c.endswith("(interrupted)") for c in captions)


def seed_captions(at) -> list[str]:
    """The captions under Results by seed's pairs (an image list per campaign)."""
    return [c for img in at.image for c in img.captions if c.startswith("seed ")]


@pytest.mark.parametrize("shared", [0, 1, 2])
def test_compare_with_one_shared_seed_or_none_shows_no_slider_and_no_exception(app, seeded, shared):
    # One shared seed set the "Seeds shown" slider's min and max both to 1: an exception
    # box; so did a campaign without seed rows (crashed in its start-up).
    from store import Store

    home, first = seeded
    cfg = parse_config({"seeds": max(1, shared), "seed": 1, "strategy_params": {"generations": 5}})
    other = run_campaign(cfg, home).campaign_id
    if not shared:
        with Store(home / "latentfuzz.duckdb").write() as con:
            con.execute("DELETE FROM seeds WHERE campaign_id = ?", [other])
    at = app("compare.py", id=[first, other], tab="Results by seed")
    assert not at.exception
    sliders = [s for s in at.slider if s.label == "Seeds shown"]
    assert len(sliders) == (shared > 1)
    assert any("no seed in common" in i.value for i in at.info) == (shared == 0)


def test_compare_says_when_rows_are_not_the_same_seeds(stopped, monkeypatch):
    home, first = stopped
    cfg = {"seeds": 3, "seed": 2, "strategy_params": {"generations": 2}}  # another draw
    other = run_campaign(parse_config(cfg), home).campaign_id
    at = page_opener(home, monkeypatch)("compare.py", tab="Results by seed")
    at.multiselect[0].set_value([first, other]).run()
    assert not at.exception, at.exception
    assert any("drew their seeds differently" in i.value for i in at.info)
    same = run_campaign(parse_config({**cfg, "seed": 1}), home).campaign_id
    # Its options now include `same`.
    at = page_opener(home, monkeypatch)("compare.py", tab="Results by seed")
    at.multiselect[0].set_value([first, same]).run()
    assert not at.exception, at.exception
    assert not any("drew their seeds differently" in i.value for i in at.info)


def test_compare_colours_campaigns_with_the_okabe_ito_palette(two_ab, monkeypatch):
    home, ids = two_ab
    at = page_opener(home, monkeypatch)("compare.py", tab="Convergence")
    at.multiselect[0].set_value(ids).run()
    assert not at.exception, at.exception
    ranges = [
        layer.get("encoding", {}).get("color", {}).get("scale", {}).get("range")
        for s in specs(at)
        for layer in [s, *s.get("layer", [])]
    ]
    assert OKABE_ITO in ranges


def test_compare_selection_is_in_the_url(two, monkeypatch):
    home, (first, second) = two
    at = page_opener(home, monkeypatch)("compare.py", id=[first, second])
    assert not at.exception, at.exception
    assert at.multiselect[0].value == [first, second]
    at.multiselect[0].set_value([second, first]).run()
    assert list(at.query_params["id"]) == [second, first]


def test_compare_says_which_linked_campaigns_it_does_not_hold(two, monkeypatch):
    home, (first, second) = two
    at = page_opener(home, monkeypatch)("compare.py", id=[first, "gone", second])
    assert not at.exception, at.exception
    assert at.multiselect[0].value == [first, second]
    assert [w.value for w in at.warning] == [
        "The link names 1 campaign this store does not hold, left out: gone. Deleted, or "
        "from another home?"
    ]
    at.run()  # still said on the next run, as long as the selection is the link's
    assert len(at.warning) == 1
    at.multiselect[0].set_value([second, first]).run()  # chosen since: no longer said
    assert not at.warning


GRID = {
    "name": "g2x2",
    "base": {"seeds": 2, "strategy_params": {"generations": 3}},
    "axes": {"seed": [1, 2], "strategy_params.perturbation": ["low", "strong"]},
}


def test_compare_opens_with_the_grid_blocked_by_its_axes(home: Path, monkeypatch):
    run = run_grid(parse_grid(GRID), home, workers=0)  # in this process: quick
    ids = run.campaign_ids()
    assert len(ids) == 4
    at = page_opener(home, monkeypatch)("compare.py")
    assert not at.exception, at.exception
    group = next(s for s in at.selectbox if s.label == "Group (study or grid)")
    assert group.value == "g2x2"
    assert sorted(at.multiselect[0].value) == sorted(ids)
    along = next(s for s in at.selectbox if s.label == "Compare along (grid axis)")
    # The axes in the glossary's words, not config paths ("Block:
    # strategy_params.perturbation = low").
    assert along.value == "seed" and list(along.options) == ["random seed", "perturbation"]
    table = at.markdown[0].value
    # Compared along the seed, blocked by the perturbation: one block per preset.
    assert "**Block: perturbation = low**" in table and "**Block: perturbation = strong**" in table
    assert "| campaign | random seed | % viable seeds" in table
    assert "strategy\\_params" not in table
    pivot = at.dataframe[0].value
    assert list(pivot.columns) == ["1", "2"] and list(pivot.index) == ["low", "strong"]
    assert pivot.index.name == "perturbation"
    along.set_value("strategy_params.perturbation").run()
    assert not at.exception, at.exception
    table = at.markdown[0].value
    assert "**Block: random seed = 1**" in table and "**Block: random seed = 2**" in table
    assert list(at.dataframe[0].value.columns) == ["low", "strong"]
    # A cell left out of the selection is a dash in the pivot (it showed "None").
    at.multiselect[0].set_value(ids[:3]).run()
    assert not at.exception, at.exception
    assert "–" in at.dataframe[0].value.to_numpy() and None not in at.dataframe[0].value.to_numpy()


def test_compare_opens_on_the_newest_group_that_has_two_campaigns(home: Path, monkeypatch):
    """A newest grid of one cell opened the page on "Choose at least two campaigns"."""
    run_grid(parse_grid(GRID), home, workers=0)
    one = {"name": "g1", "base": GRID["base"], "axes": {"seed": [7]}}
    run_grid(parse_grid(one), home, workers=0)
    at = page_opener(home, monkeypatch)("compare.py")
    assert not at.exception, at.exception
    group = next(s for s in at.selectbox if s.label == "Group (study or grid)")
    assert group.value == "g2x2" and "g1" in group.options
    assert not any("Choose at least two" in i.value for i in at.info)


def test_a_campaign_deleted_while_compared_is_said_to_have_left(home: Path, monkeypatch):
    from engine.campaign.config import parse_config
    from engine.campaign.runner import run_campaign
    from store import Store, admin

    ids = [
        run_campaign(
            parse_config({"seeds": 1, "seed": s, "strategy_params": {"generations": 2}}), home
        ).campaign_id
        for s in (1, 2, 3)
    ]
    at = page_opener(home, monkeypatch)("compare.py", id=ids)
    assert sorted(at.multiselect[0].value) == sorted(ids)
    admin.delete_campaign(Store(home / "latentfuzz.duckdb"), home, ids[2])
    at.run()
    assert not at.exception, at.exception
    assert sorted(at.multiselect[0].value) == sorted(ids[:2])
    assert any(f"{ids[2]} no longer here (deleted?), left out" in t.value for t in at.toast)


def test_campaigns_of_different_objectives_get_one_convergence_chart_each(tmp_path, monkeypatch):
    """A margin (logits) and a boundary (1e6, then a latent distance) campaign shared one
    "median best fitness" axis: SINVAD's 1e6 flattened the GA's curve to zero."""
    import json

    from engine.campaign.config import parse_config
    from engine.campaign.runner import run_campaign
    from tests.helpers import page_opener

    ga = run_campaign(
        parse_config({"seeds": 3, "seed": 1, "strategy_params": {"generations": 4}}), tmp_path
    ).campaign_id
    sinvad = run_campaign(
        parse_config(
            {"seeds": 3, "seed": 1, "strategy": "sinvad", "strategy_params": {"generations": 4}}
        ),
        tmp_path,
    ).campaign_id
    ga2 = run_campaign(
        parse_config({"seeds": 3, "seed": 2, "strategy_params": {"generations": 4}}), tmp_path
    ).campaign_id
    at = page_opener(tmp_path, monkeypatch)("compare.py", id=[ga, sinvad, ga2], tab="Convergence")
    assert not at.exception, at.exception
    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    titles = [s["title"] for s in specs if "layer" in s]
    assert titles == ["objective: margin", "objective: boundary"]
    margin, boundary = (s for s in specs if "layer" in s)

    def color(spec) -> dict:
        return {**spec.get("encoding", {}), **spec["layer"][0].get("encoding", {})}["color"]

    # Each lists its own campaigns; a campaign keeps its colour across the charts.
    assert len(color(margin)["legend"]["values"]) == 2
    assert len(color(boundary)["legend"]["values"]) == 1
    assert color(margin)["scale"]["domain"] == color(boundary)["scale"]["domain"]
    assert len(color(margin)["scale"]["domain"]) == 3
    assert any("One chart per objective (margin, boundary)" in c.value for c in at.caption)


def test_compare_page_blocks_strategies_by_evaluation_budget_and_shows_metrics(
    strategy_app, strategy_study
):
    _, ids = strategy_study
    at = strategy_app("compare.py")
    assert not at.exception
    assert sorted(at.multiselect[0].value) == sorted(ids)  # the newest study by default
    text = "\n".join(m.value for m in at.markdown)
    # The study set both 70 evaluations per seed (4 GA generations); sinvad's 50 + 30 is
    # cut short to 50 + 20. They were two blocks, 70 and 50, each strategy alone in bold.
    assert text.count("**Block:") == 1
    # A study is its own block (its campaigns share their seeds, whatever they search).
    assert re.search(
        r"\*\*Block: mnist, study\\-[\d\\a-f-]+, 70 evaluations per seed at most\*\*", text
    )
    assert "Budget kept by: truncate last generation\\." in text
    assert "| campaign | strategy | % viable seeds" in text
    metrics = next(m.value for m in at.markdown if "failures / 1k evals" in m.value)
    assert "| ga |" in metrics and "| sinvad |" in metrics


def test_compare_gives_differential_campaigns_their_own_columns(diffed_app, diffed):
    home, cid = diffed
    other = run_campaign(
        parse_config({"seeds": 2, "strategy_params": {"generations": 2}}), home
    ).campaign_id
    at = diffed_app("compare.py")
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
    at.session_state["tab"] = "Results by seed"
    at.run()
    seeds = seed_captions(at)
    assert any(" → A " in c and ", B " in c for c in seeds), seeds
