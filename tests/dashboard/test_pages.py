"""AppTest of every page against a small seeded store."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
import yaml
from streamlit.testing.v1 import AppTest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from tests.helpers import page_opener

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> tuple[Path, str]:
    home = tmp_path_factory.mktemp("home")
    cfg = parse_config({"seeds": 4, "seed": 1, "strategy_params": {"generations": 30}})
    return home, run_campaign(cfg, home).campaign_id


@pytest.fixture
def app(seeded, monkeypatch):
    return page_opener(seeded[0], monkeypatch)


def test_campaign_page_shows_status_chart_gallery_and_table(app, seeded):
    home, cid = seeded
    at = app("campaign.py", id=cid)
    assert not at.exception
    assert at.title[0].value.startswith("Campaign")
    labels = [m.label for m in at.metric]
    assert labels == ["viable seeds", "misclassified", "iterations (ICST)", "iterations to failure"]
    assert at.metric[0].value.endswith("of 4")
    assert at.radio(key="x_axis").options == ["generation", "evaluations", "seconds"]
    assert len(at.get("vega_lite_chart")) >= 2  # convergence chart, top-2 probabilities
    assert any("expected" in c.value for c in at.caption)  # gallery captions
    assert len(at.get("download_button")) == 2


def test_campaign_page_for_an_unknown_id_says_so_and_waits_for_it(app, seeded):
    at = app("campaign.py", id="not-started-yet")
    assert not at.exception
    # Nothing launched it and no process reported start-up: not "Starting the campaign".
    from dashboard.text import md_text

    assert f"No campaign with id {md_text('not-started-yet')}" in at.warning[0].value
    assert not [i for i in at.info if "Starting" in i.value]
    assert not at.get("progress")  # no start-up checklist for an id nothing started
    (seeded[0] / "launch").mkdir(exist_ok=True)
    (seeded[0] / "launch" / "just-launched.log").write_text("")  # the New campaign page's
    at = app("campaign.py", id="just-launched")
    assert "Starting the campaign" in at.info[0].value


def test_a_failed_launch_says_why_in_one_line_first(app, seeded):
    from dashboard.launch import failure

    traceback = (
        'n.py", line 1126, in __call__\n    return self.main(*args)\n'
        "FileExistsError: [Errno 17] File exists: '/h/campaigns/x'\n"
    )
    assert failure(traceback) == "FileExistsError: [Errno 17] File exists: '/h/campaigns/x'"
    one_line = "loading models\nerror: unknown generator 'nope'; expected one of [...]\n"
    assert failure(one_line) == "error: unknown generator 'nope'; expected one of [...]"
    assert failure("") == "" and failure("a\nlast words\n") == "last words"
    (seeded[0] / "launch").mkdir(exist_ok=True)
    (seeded[0] / "launch" / "broken.log").write_text(traceback)
    at = app("campaign.py", id="broken")
    assert not at.exception
    assert at.error[0].value.startswith("The campaign did not start: FileExistsError: [Errno 17]")
    assert at.expander[0].label == "Its log"


def test_a_campaign_whose_images_are_gone_still_shows_its_page(home: Path, monkeypatch):
    cfg = parse_config({"seeds": 2, "seed": 1, "strategy_params": {"generations": 3}})
    cid = run_campaign(cfg, home).campaign_id
    for png in (home / "campaigns" / cid).rglob("seed.png"):
        png.unlink()
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception
    assert any(w.value.startswith("No zip:") and "doctor" in w.value for w in at.warning)
    assert len(at.get("download_button")) == 1  # the CSV still


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
    assert "best_left (elites) = 10 must be smaller than Population = 10" in text
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
    assert args[1:4] == ["-m", "engine.cli.main", "run"] and kwargs["start_new_session"]
    cid = args[args.index("--id") + 1]
    assert at.query_params["id"] == [cid] or at.query_params["id"] == cid
    cfg = yaml.safe_load(Path(args[args.index("--config") + 1]).read_text())
    assert cfg["seeds"] == 2 and cfg["strategy"] == "ga"
    assert cfg["strategy_params"]["init_step"] == 0.5


def test_models_page_lists_the_zoo(app):
    at = app("models.py")
    assert not at.exception
    names = at.dataframe[0].value["name"].tolist()
    assert {"mnist-convnet", "mnist-vae", "mnist-gan", "mnist-dm"} <= set(names)


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
    assert len(at.get("vega_lite_chart")) >= 1
    assert "Fisher's exact test" in at.caption[0].value
    assert "blocks of equal dataset, perturbation and generation budget" in at.caption[0].value
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
    captions = [c.value for c in at.caption if c.value.startswith("seed ")]
    assert any(c.endswith("(interrupted)") for c in captions)


def test_an_interrupted_campaign_offers_resume_in_view_and_waits_for_it(home: Path, monkeypatch):
    from dashboard import launch
    from store import Store
    from store.liveness import CampaignLock

    def stop_at_2(p) -> None:
        if p.generation == 2:
            raise KeyboardInterrupt

    cfg = parse_config({"seeds": 3, "seed": 1, "strategy_params": {"generations": 30}})
    cid = run_campaign(cfg, home, progress=stop_at_2).campaign_id
    calls = []
    monkeypatch.setattr(launch, "resume", lambda h, c: calls.append((h, c)))
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception
    assert "This campaign is interrupted" in at.warning[0].value
    button = next(b for b in at.button if b.label == "Resume")
    assert not [e for e in at.expander if any(b.label == "Resume" for b in e.button)]
    button.click().run()
    assert calls == [(home, cid)]
    assert any("Resuming" in i.value for i in at.info)  # waits for the process
    # The resumed process holds the campaign's lock and marks it running: the page goes
    # live (the next reruns would show its progress).
    lock = CampaignLock(home, cid).acquire()
    try:
        with Store(home / "latentfuzz.duckdb").write() as con:
            con.execute("UPDATE campaigns SET status = 'running' WHERE id = ?", [cid])
        at.run()
        assert not at.exception and not [w for w in at.warning if "interrupted" in w.value]
        assert any(m.value == "**Status:** running" for m in at.markdown)
    finally:
        lock.release()


def test_a_finished_campaign_still_writing_its_metrics_stays_live(home: Path, monkeypatch):
    """Watched to its end, a campaign's page stopped refreshing at "finished", before its
    process had written the metrics, and said "reload then" for good."""
    from store import Store
    from store.liveness import CampaignLock

    cfg = parse_config({"seeds": 2, "seed": 1, "strategy_params": {"generations": 3}})
    cid = run_campaign(cfg, home).campaign_id
    with Store(home / "latentfuzz.duckdb").write() as con:
        con.execute("DELETE FROM campaign_metrics WHERE campaign_id = ?", [cid])
    lock = CampaignLock(home, cid).acquire()  # its process, still closing
    try:
        at = page_opener(home, monkeypatch)("campaign.py", id=cid)
        assert not at.exception
        assert any("writing its metrics" in c.value for c in at.caption)
        assert not [h for h in at.subheader if h.value == "Metrics"]  # the live view only
    finally:
        lock.release()
    at.run()
    assert not at.exception
    assert not any("writing its metrics" in c.value for c in at.caption)
    assert any("No metrics were stored" in i.value for i in at.info)


def test_a_crashed_campaign_says_why_once_beside_its_resume_button(home: Path, monkeypatch):
    from store import Store
    from store.liveness import CRASHED_ERROR

    cfg = parse_config({"seeds": 2, "seed": 1, "strategy_params": {"generations": 5}})
    cid = run_campaign(cfg, home).campaign_id
    with Store(home / "latentfuzz.duckdb").write() as con:  # as a reader marks a dead one
        con.execute("UPDATE campaigns SET status = 'crashed', error = ? WHERE id = ?",
                    [CRASHED_ERROR.format(cid=cid), cid])  # fmt: skip
    at = page_opener(home, monkeypatch)("campaign.py", id=cid)
    assert not at.exception, at.exception
    assert at.warning[0].value.startswith(
        "This campaign is crashed: the campaign process ended without closing the campaign "
        "(killed, out of memory or a power loss). Its figures cover"
    )
    assert not at.error  # the red box that repeated it, with the command line's advice
    assert any(b.label == "Resume" for b in at.button)


def test_a_cli_campaign_shows_up_and_updates_live(home: Path, env, monkeypatch):
    """Started from a terminal in another process, watched by the Campaign page: no lock
    error at any refresh, and the page follows the campaign to its end."""
    import time

    from store import Store
    from store import campaigns as sc
    from tests.helpers import start_cli, wait_for_campaign

    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    st.cache_resource.clear()
    # Long enough to outlast a few of the writer's flushes (2 s apart at least): with the
    # classifier as a graph, 10 seeds x 120 generations ended before its first one.
    proc = start_cli(["run", "--seeds", "20", "--generations", "400", "--perturbation", "low",
                      "--seed", "3", "--quiet"], env)  # fmt: skip
    cid = wait_for_campaign(Store(home / "latentfuzz.duckdb"), proc)
    statuses = []
    while True:
        at = AppTest.from_file(APP, default_timeout=60).run()
        at.switch_page("../pages/campaign.py")
        at.query_params["id"] = cid
        at.run()  # one refresh of the page, as the live fragment does every 2 s
        assert not at.exception, at.exception
        assert not [e.value for e in at.error]
        status = next(m.value for m in at.markdown if m.value.startswith("**Status:**"))
        # While it runs: a progress bar that says where it is and how long is left.
        bars = [b.proto.text for b in at.get("progress")]
        statuses.append(" ".join([status, *bars]))
        if proc.poll() is not None and "finished" in statuses[-1]:
            break
        time.sleep(0.5)
    assert proc.returncode == 0
    running = [s for s in statuses if "running" in s]
    assert len(set(running)) >= 2, f"the page did not follow the campaign: {statuses}"
    searching = [s for s in running if "drawing" not in s]  # before its first generation
    assert searching and all("of 400" in s and "seeds done" in s for s in searching), running
    assert any("left" in s for s in running), running
    assert sc.campaign(Store(home / "latentfuzz.duckdb"), cid)["status"] == "finished"


@pytest.mark.parametrize("axis", ["evaluations", "seconds"])
def test_convergence_x_axis_switches(app, seeded, axis):
    _, cid = seeded
    at = app("campaign.py", id=cid)
    at.radio(key="x_axis").set_value(axis).run()
    assert not at.exception
    spec = at.get("vega_lite_chart")[0].proto.spec
    field = {"evaluations": "evaluations", "seconds": "elapsed_s"}[axis]
    assert f'"field":"{field}"' in spec.replace(" ", "")


@pytest.mark.parametrize("shared", [0, 1, 2])
def test_compare_with_one_shared_seed_or_none_shows_no_slider_and_no_exception(app, seeded, shared):
    # One shared seed set the "Seeds shown" slider's min and max both to 1: an exception
    # box; so did a campaign without seed rows (crashed in its start-up).
    from store import Store

    home, first = seeded
    cfg = parse_config({"seeds": max(1, shared), "seed": 1,
                        "strategy_params": {"generations": 5}})  # fmt: skip
    other = run_campaign(cfg, home).campaign_id
    if not shared:
        with Store(home / "latentfuzz.duckdb").write() as con:
            con.execute("DELETE FROM seeds WHERE campaign_id = ?", [other])
    at = app("compare.py", id=[first, other])
    assert not at.exception
    sliders = [s for s in at.slider if s.label == "Seeds shown"]
    assert len(sliders) == (shared > 1)
    assert any("no seed in common" in i.value for i in at.info) == (shared == 0)


def test_campaign_page_with_an_empty_id_offers_the_campaigns(app, seeded):
    # It said "No campaign with id ." and waited for one.
    at = app("campaign.py", id="")
    assert not at.exception and not at.warning
    assert at.selectbox[0].label == "Campaign"
