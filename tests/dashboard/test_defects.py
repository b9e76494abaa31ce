"""AppTests for defects users met in the browser (issue 11): crashes, names rendered as
markup, charts that hide data. Each failed before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from store import Store
from tests.helpers import page_opener


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
def app(stopped, monkeypatch):
    return page_opener(stopped[0], monkeypatch)


def test_the_page_of_an_interrupted_campaign_opens(app, stopped):
    _, cid = stopped
    at = app("campaign.py", id=cid, tab="Seed detail")
    assert not at.exception, at.exception
    assert any("final prediction **–**, – iterations, status interrupted" in m.value
               for m in at.markdown)  # fmt: skip
    assert len(at.get("download_button")) == 2  # results and downloads stay reachable


@pytest.mark.parametrize("text", ["(", "[", "paren (test) [x]", "*"])
def test_campaign_search_takes_any_text(app, text):
    at = app("campaigns.py")
    at.text_input[0].set_value(text).run()
    assert not at.exception, at.exception
    shown = at.dataframe[0].value
    assert len(shown) == (1 if text in "paren (test) [x]" else 0)


def test_names_are_text_on_the_campaign_page(stopped, monkeypatch):
    home, _ = stopped
    name = "a|b *c* <script>alert(1)</script> $x$"
    cfg = {"seeds": 2, "seed": 1, "name": name, "strategy_params": {"generations": 2}}
    cid = run_campaign(parse_config(cfg), home).campaign_id
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    title = at.title[0].value
    assert "<script>" not in title and "&lt;script&gt;" in title
    for raw in ("|", "*", "$"):
        assert f"\\{raw}" in title and title.count(raw) == title.count(f"\\{raw}")


def test_convergence_chart_says_what_the_fitness_is_and_draws_single_points():
    import pandas as pd

    from dashboard.components import convergence_chart
    from engine.search.fitness import BOUNDARY_UNCHANGED

    one = pd.DataFrame({"seed_idx": [0], "generation": [1], "evaluations": [25],
                        "elapsed_s": [0.1], "best_fitness": [0.5], "best_pred": [3]})  # fmt: skip
    spec = convergence_chart(one).to_dict()
    line = spec["layer"][0]
    assert line["mark"]["point"]  # one row still draws a visible mark
    assert line["encoding"]["x"]["axis"]["format"] == "d"  # whole generations
    assert "(margin of the expected class)" in line["encoding"]["y"]["title"]
    two = pd.concat([one, one.assign(generation=2, best_fitness=BOUNDARY_UNCHANGED)])
    spec = convergence_chart(two, fitness="boundary").to_dict()
    assert "(L1 distance to the seed," in spec["layer"][0]["encoding"]["y"]["title"]
    data = spec["datasets"][spec["layer"][0]["data"]["name"]]
    assert [r["best_fitness"] for r in data] == [0.5]  # the 1e6 placeholder is not drawn


def test_compare_says_when_rows_are_not_the_same_seeds(stopped, monkeypatch):
    home, first = stopped
    cfg = {"seeds": 3, "seed": 2, "strategy_params": {"generations": 2}}  # another draw
    other = run_campaign(parse_config(cfg), home).campaign_id
    at = page_opener(home, monkeypatch)("compare.py")
    at.multiselect[0].set_value([first, other]).run()
    assert not at.exception, at.exception
    assert any("drew their seeds differently" in i.value for i in at.info)
    same = run_campaign(parse_config({**cfg, "seed": 1}), home).campaign_id
    at = page_opener(home, monkeypatch)("compare.py")  # its options now include `same`
    at.multiselect[0].set_value([first, same]).run()
    assert not at.exception, at.exception
    assert not any("drew their seeds differently" in i.value for i in at.info)


def test_an_invalid_study_reads_as_a_sentence(monkeypatch, tmp_path):
    home = tmp_path / "home"
    cfg = {"seeds": 4, "seed": 1, "strategy_params": {"generations": 30}}
    run_campaign(parse_config(cfg), home)  # the strong GA fails its viable seeds
    at = page_opener(home, monkeypatch)("studies.py")
    assert not at.exception, at.exception
    next(s for s in at.selectbox if s.label == "Verdict rule").set_value("majority")
    next(n for n in at.number_input if n.label == "Labellers per image (k)").set_value(2)
    next(b for b in at.button if b.label == "Create study").click().run()
    assert not at.exception, at.exception
    (error,) = at.error
    assert error.value.startswith("Cannot create the study; please fix:")
    assert (
        "- majority vote needs k &gt;= 3 answers per image, got Labellers per image \\(k\\) = 2"
        in error.value
    )
    for dump in ("validation error", "For further information", "Value error", "type="):
        assert dump not in error.value


def test_the_failure_line_is_drawn_only_where_a_score_splits_failing_from_passing():
    """A red line at 0 on every convergence chart read, for a divergence or a boundary
    distance, as a failure threshold that those objectives do not have."""
    import pandas as pd

    from dashboard.components import convergence_chart

    gens = pd.DataFrame({"seed_idx": [0, 0], "generation": [1, 2], "evaluations": [25, 50],
                         "elapsed_s": [0.1, 0.2], "best_fitness": [0.5, -0.2],
                         "best_pred": [3, 5]})  # fmt: skip

    def rules(**kw) -> list:
        spec = convergence_chart(gens, **kw).to_dict()
        return [spec["datasets"][layer["data"]["name"]][0]["y"]
                for layer in spec["layer"] if layer["mark"].get("type") == "rule"]  # fmt: skip

    assert rules() == rules(fitness="targeted") == [0.0]
    assert rules(fitness="margin", criterion="misclassified") == [0.0]
    assert rules(fitness="divergence") == rules(fitness="boundary") == []
    # A margin searched under another criterion: 0 is not where that criterion fails.
    assert rules(fitness="margin", criterion="disagree") == []


def test_a_link_naming_two_campaigns_says_which_it_shows(stopped, monkeypatch):
    home, cid = stopped
    cfg = {"seeds": 2, "seed": 2, "name": "second", "strategy_params": {"generations": 2}}
    other = run_campaign(parse_config(cfg), home).campaign_id
    at = page_opener(home, monkeypatch)("campaign.py", id=[cid, other])
    assert not at.exception, at.exception
    assert cid in at.caption[0].value  # the first, as the warning says
    assert any("names 2 campaigns" in w.value and "Compare" in w.value for w in at.warning)


def test_a_stopped_campaign_says_its_unfinished_seeds_are_not_counted(app, stopped):
    """'misclassified 0' above a chart of seeds far past the failure line read as "found
    nothing": seeds stopped mid-search (with stop_at_failure off, after failing) have no
    outcome, and the page and the CLI now say so."""
    from engine.cli.main import status_line
    from store import campaigns as sc

    home, cid = stopped
    s = sc.summary(Store(home / "latentfuzz.duckdb"), cid)
    n = s["interrupted"]
    assert n == s["viable"] > 0
    seeds = f"{n} viable seed{'s' if n != 1 else ''}"
    line = status_line(s)
    assert f"; {seeds} stopped before finishing: not counted, nor any failure" in line
    assert f"(`latentfuzz resume {cid}` finishes them)" in line
    at = app("campaign.py", id=cid)
    assert any(c.value.startswith(f"{seeds} stopped before finishing") and
               c.value.endswith("Resume finishes them.") for c in at.caption)  # fmt: skip
    # A failed campaign's seeds were stopped too, and resume refuses it: no such advice.
    failed = {**s, "status": "failed"}
    assert "nor any failure" in status_line(failed) and "resume" not in status_line(failed)
