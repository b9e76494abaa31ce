"""resume after Ctrl-C, delete, rename and doctor, through the command line."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pandas as pd
import torch
from PIL import Image

from engine.campaign import startup
from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.io import doctor
from store import Store
from store import campaigns as sc
from tests.helpers import db, start_cli, wait_for_campaign, wait_for_generation
from tests.reliability.conftest import cli, one_line_error
from tests.reliability.test_kill_resume import SETTINGS, outcomes

SMALL = {
    "seeds": 2,
    "seed": 3,
    "strategy_params": {"generations": 4, "population": 6, "best_left": 2},
}


def test_an_interrupted_campaign_resumes_from_the_cli_to_the_same_outcomes(home, env, tmp_path):
    import yaml

    torch.set_num_threads(1)
    env = {**env, "OMP_NUM_THREADS": "1"}
    run_campaign(parse_config(SETTINGS), home, campaign_id="reference")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(SETTINGS))
    store = db(home)
    proc = start_cli(["run", "--config", str(cfg), "--id", "stopped", "--quiet"], env)
    wait_for_campaign(store, proc)
    wait_for_generation(store, "stopped", 2)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)
    status = sc.campaign(store, "stopped")["status"]
    if status == "interrupted":  # (on a very fast machine it may have finished first)
        p = cli(["resume", "stopped", "--quiet"], env)
        assert "stopped finished" in " ".join(p.stdout.split())
        # The Campaign page's replay report (engine/campaign/startup.py, tests/engine/
        # test_startup.py) is read while the campaign runs; it stayed in the home for good.
        assert startup.read_replay(home, "stopped") is None
        assert not startup.replay_path(home, "stopped").exists()
    pd.testing.assert_frame_equal(
        outcomes(store, "stopped"), outcomes(store, "reference"), check_dtype=False
    )
    p = cli(["resume", "stopped"], env, ok=False)
    one_line_error(p, "campaign stopped is finished; only crashed or interrupted campaigns")
    one_line_error(cli(["resume", "nope"], env, ok=False), "no campaign 'nope'")


def test_rename_and_delete(home: Path, env):
    run_campaign(parse_config(SMALL), home, campaign_id="c1")
    run_campaign(parse_config(SMALL), home, campaign_id="c2")
    cli(["rename", "c1", "my best run"], env)
    store = db(home)
    assert sc.campaign(store, "c1")["name"] == "my best run"
    p = cli(["delete", "c1"], env, ok=False, input="n\n")
    one_line_error(p, "nothing deleted")
    assert sc.campaign(store, "c1") is not None and (home / "campaigns" / "c1").is_dir()
    (home / "launch").mkdir(exist_ok=True)
    for leftover in ("c1.log", "c1.steps", "c1.replay", "c10.log"):  # as a launch leaves them
        (home / "launch" / leftover).write_text("x")
    cli(["delete", "c1"], env, input="y\n")
    # Its launch files go with it (left, its page said "Starting the campaign…" for good);
    # another campaign's stay.
    assert sorted(p.name for p in (home / "launch").iterdir()) == ["c10.log"]
    cli(["delete", "c2", "--yes"], env)
    assert sc.list_campaigns(store).empty and not list((home / "campaigns").iterdir())
    for t in ("seeds", "generations", "individuals", "images"):
        assert store.query(f"SELECT count(*) AS n FROM {t}")["n"][0] == 0
    one_line_error(cli(["delete", "c1", "--yes"], env, ok=False), "no campaign 'c1'")
    assert "no anomaly" in cli(["doctor"], env).stdout


def test_doctor_lists_orphans_missing_images_and_short_strips_and_fixes_what_is_safe(home, env):
    run_campaign(parse_config(SMALL), home, campaign_id="c1")
    store = Store(home / "latentfuzz.duckdb")
    seeds = sc.seeds(store, "c1")
    searched = seeds[seeds.viable].iloc[0]
    (home / searched.result_image).unlink()
    strip = home / searched.improvements_image
    Image.open(home / searched.seed_image).save(strip)  # one frame left of several
    (home / "campaigns" / "ghost").mkdir()
    kinds = {(f.kind, f.campaign) for f in doctor.check(store, home)}
    assert kinds == {
        ("missing-images", "c1"),
        ("dangling-frames", "c1"),
        ("orphan-folder", "ghost"),
    }
    p = cli(["doctor"], env, ok=False)
    assert p.returncode == 1 and "orphan-folder\tghost" in p.stdout
    p = cli(["doctor", "--fix"], env, ok=False)
    assert "moved" in p.stdout and "ghost" in p.stdout
    assert (home / "orphans" / "ghost").is_dir()
    kinds = {(f.kind, f.campaign) for f in doctor.check(store, home)}
    assert kinds == {("missing-images", "c1"), ("dangling-frames", "c1")}


def test_an_interrupted_campaigns_missing_files_are_found_and_a_file_at_its_folder_refused(
    home, env
):
    run_campaign(parse_config(SMALL), home, campaign_id="c1")
    store = Store(home / "latentfuzz.duckdb")
    with store.write() as con:  # as Ctrl-C leaves it (without the stop, which is slow here)
        con.execute("UPDATE campaigns SET status = 'interrupted' WHERE id = 'c1'")
    assert doctor.check(store, home) == []  # interrupted alone is not an anomaly
    seeds = sc.seeds(store, "c1")
    (home / seeds[seeds.viable].iloc[0].result_image).unlink()
    found = doctor.check(store, home)
    assert [(f.kind, f.campaign) for f in found] == [("missing-images", "c1")], found
    assert "interrupted with 1 missing images; `latentfuzz resume c1`" in found[0].detail
    folder = home / "campaigns" / "c1"
    folder.rename(home / "c1.bak")
    folder.write_text("not a folder")
    one_line_error(
        cli(["resume", "c1"], env, ok=False), f"{folder} is not a folder", "move that file aside"
    )


def test_paths_yaml_and_settings_that_cannot_be_used_get_one_line(home: Path, env, tmp_path):
    """Each of these was a traceback (IsADirectoryError, FileNotFoundError, a six-line
    YAML message, a pydantic dump), and the zip left a stray .part beside the folder."""
    run_campaign(parse_config(SMALL), home, campaign_id="c1")
    one_line_error(
        cli(["export", "c1", "--zip", str(tmp_path)], env, ok=False),
        f"{tmp_path} is a folder; give the zip's file path",
    )
    assert not tmp_path.with_name(tmp_path.name + ".part").exists()
    one_line_error(
        cli(["export", "c1", "--zip", str(tmp_path / "no" / "x.zip")], env, ok=False),
        f"folder {tmp_path / 'no'} does not exist",
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text("seeds: [1\n")
    one_line_error(
        cli(["run", "-c", str(bad)], env, ok=False), f"{bad} is not valid YAML at line 2, column 1"
    )
    one_line_error(
        cli(["run", "-c", str(tmp_path)], env, ok=False), f"config file {tmp_path} is a folder"
    )
    one_line_error(
        cli(["labels", "create", "--campaign", "c1", "--k", "0"], env, ok=False),
        "--k: Input should be greater than or equal to 1 (you gave 0)",
    )
    # What reaches the command's top level from a library: one line, the file named.
    from engine.cli.common import one_line

    assert one_line(IsADirectoryError(21, "Is a directory", str(tmp_path))) == (
        f"cannot use {tmp_path}: it is a folder; give the path of a file"
    )
    # By cause: an input file that is not there is not asked to be "a folder you may write".
    assert one_line(FileNotFoundError(2, "No such file", "in.csv")) == (
        "cannot use in.csv: no such file or folder; check the path"
    )
    assert one_line(RuntimeError("a bug")) is None  # a bug keeps its traceback


def test_ctrl_c_in_the_start_up_stops_a_background_run_and_says_so(home: Path, env):
    """Started from a shell's `&`, a process inherits SIGINT ignored: a Ctrl-C in its first
    seconds was lost (the campaign ran to the end), and one a little later said the last
    rows were in a recovery file, which was not so."""
    import signal as sig

    from engine.campaign import startup
    from tests.helpers import start_cli

    proc = start_cli(
        ["run", "--id", "early", "--seeds", "2", "--generations", "50"],
        env,
        preexec_fn=lambda: sig.signal(sig.SIGINT, sig.SIG_IGN),
    )
    deadline = time.time() + 60
    while not startup.read(home, "early"):  # its first step: the handler is in place
        assert proc.poll() is None and time.time() < deadline
        time.sleep(0.01)
    proc.send_signal(sig.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted before the search began" in stderr and "recovery" not in stderr


def test_a_resume_stopped_mid_replay_keeps_the_campaigns_evaluation_count(tmp_path: Path):
    """The replay evaluates the stored generations again; a Ctrl-C inside it closed the
    campaign with that partial count (54,078 evaluations fell to 49,308 in a walkthrough)."""
    from engine.campaign.resume import resume_campaign

    raw = {
        "seeds": 2,
        "seed": 1,
        "strategy_params": {"generations": 40, "perturbation": "low", "stop_at_failure": False},
    }

    def stop_at(g: int):
        def progress(p) -> None:
            if p.generation == g:
                raise KeyboardInterrupt

        return progress

    cut = run_campaign(parse_config(raw), tmp_path, progress=stop_at(20))
    assert cut.status == "interrupted" and cut.evaluations > 0
    again = resume_campaign(tmp_path, cut.campaign_id, progress=stop_at(5))  # mid-replay
    assert again.status == "interrupted"
    stored = sc.campaign(db(tmp_path), cut.campaign_id)["evaluations"]
    assert again.evaluations == stored == cut.evaluations
    done = resume_campaign(tmp_path, cut.campaign_id)
    assert done.status == "finished" and done.evaluations > cut.evaluations
