"""The command line under hostile input: YAML bombs, huge values, bad addresses, a
stray streamlit config, and names that carry terminal escape sequences. Each ends in
one line (or a served dashboard), never a traceback, a hang or a raw escape."""

from __future__ import annotations

import io
import os
import re
import resource
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from engine.cli.common import CliConsole, Table
from tests.engine.core.test_yaml_io import billion_laughs
from tests.engine.io.test_import_results import GEN, ROWS, rng_images, write_folder
from tests.helpers import CLI

#: Terminal escapes an attacker would put in a name: retitle the window, clear the screen.
TITLE, CLEAR, CSI = "\x1b]0;pwned\x07", "\x1b[2J", "\x9b31m"


def cli(args: list[str], env: dict[str, str], cwd: Path | None = None, timeout: float = 300):
    """The CLI run to its end; `timeout` kills it (subprocess.run does) on a hang."""
    return subprocess.run(
        [*CLI, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def refused(p: subprocess.CompletedProcess) -> str:
    """The one `error:` line of a refusal (exit 2, no traceback)."""
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr[:2000]
    return lines[0]


def nothing_written(home: Path) -> None:
    assert not (home / "campaigns").exists() or not any((home / "campaigns").iterdir())


def test_a_yaml_bomb_config_is_refused_in_one_line(home: Path, env, tmp_path: Path):
    bomb = tmp_path / "laughs.yaml"
    bomb.write_text(billion_laughs())
    # The report's run grew past 830 MB and never ended; the timeout ends it here.
    line = refused(cli(["run", "--config", str(bomb)], env, timeout=120))
    assert str(bomb) in line and "billion laughs" in line
    deep = tmp_path / "deep.yaml"
    deep.write_text("name: " + "[" * 5000 + "]" * 5000 + "\n")
    assert "levels deep" in refused(cli(["run", "--config", str(deep)], env, timeout=120))
    nothing_written(home)


def test_a_long_name_is_refused_without_being_echoed(home: Path, env, tmp_path: Path):
    cfg = tmp_path / "long.yaml"
    cfg.write_text("name: " + "A" * 1_000_000 + "\n")
    line = refused(cli(["run", "--config", str(cfg)], env))
    assert len(line) < 400 and "at most 200 characters" in line
    line = refused(cli(["run", "--name", "B" * 100_000, "--seeds", "1"], env))
    assert len(line) < 400
    line = refused(cli(["run", "--seeds", "9" * 100_000 + "x"], env))  # click's refusal
    assert len(line) < 400 and "--seeds" in line
    nothing_written(home)


@pytest.mark.parametrize(
    "flags",
    [
        ["--perturbation", "custom", "--step", "1e308"],
        ["-p", "perturbation=custom", "-p", "step=1e308"],
        ["--init-step", "1e300"],
        ["--max-step", "inf"],
        ["--strategy", "sinvad", "--step", "1e308"],
    ],
)
def test_huge_and_infinite_steps_are_refused_before_the_search(home: Path, env, flags):
    line = refused(cli(["run", "--seeds", "1", "--generations", "1", "--quiet", *flags], env))
    assert "step" in line or "noise" in line
    nothing_written(home)


def capped(gib: int = 6):
    """A preexec_fn capping the child's address space: a command that allocates what it
    was asked for fails there, not by taking the machine's memory from the suite."""
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (gib * 2**30, gib * 2**30))


def test_a_grid_of_a_billion_cells_is_refused_before_one_is_built(home: Path, env, tmp_path):
    grid = tmp_path / "bomb.yaml"
    axes = "".join(f"  strategy_params.k{i}: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n" for i in range(9))
    grid.write_text(f"name: bomb\nbase: {{seeds: 2}}\naxes:\n{axes}")
    # 300 bytes: the grid expanded its cells for 40 s, past 1 GB, and never started one.
    p = subprocess.run(
        [*CLI, "grid", str(grid), "-q"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=capped(),
    )
    line = refused(p)
    assert "1,000,000,000 cells" in line and "at most 10,000" in line
    assert not (home / "grids").exists()
    nothing_written(home)


@pytest.mark.parametrize("repetitions", ["1000000000", "0"])
def test_a_diff_study_repeated_too_often_or_never_is_one_line(home: Path, env, repetitions):
    args = ["diff-study", "--repetitions", repetitions, "--seeds", "1", "--evaluations", "10"]
    # 10^9: a MemoryError building the axis; 0: a KeyError once nothing ran.
    p = subprocess.run(
        [*CLI, *args], env=env, capture_output=True, text=True, timeout=300, preexec_fn=capped()
    )
    assert f"--repetitions is {repetitions}, expected 1 to 10,000" in refused(p)
    nothing_written(home)


def test_a_search_too_big_to_hold_is_refused_before_the_campaign(home: Path, env):
    args = ["run", "--seeds", "1000", "--population", "10000", "--generations", "1", "-q"]
    # It drew 15 GB of noise in one call, then a traceback and a `failed` campaign.
    p = subprocess.run(
        [*CLI, *args], env=env, capture_output=True, text=True, timeout=300, preexec_fn=capped()
    )
    line = refused(p)
    assert "1,000 seeds x 10,000 latents each" in line and "lower --seeds or --population" in line
    nothing_written(home)


def test_interpolations_too_many_to_hold_or_to_draw_are_one_line(home: Path, env):
    def run(*flags: str) -> subprocess.CompletedProcess:
        args = ["run", "--strategy", "interpolate", "--lambda-steps", "1", "-q", *flags]
        return subprocess.run(
            [*CLI, *args], env=env, capture_output=True, text=True, timeout=300, preexec_fn=capped()
        )

    # k=100 of 9 other classes for 1,000 seeds: 5.5 GB in one call, then a traceback.
    line = refused(run("--seeds", "1000", "-p", "k=100"))
    assert "900 latents each" in line and "(interpolate: k)" in line
    nothing_written(home)
    # More images per class than the test set has: a ValueError traceback.
    line = refused(run("--seeds", "1", "-p", "k=1000"))
    assert "test images, k=1000 asked; lower k" in line


def test_a_csv_header_is_not_echoed_whole(home: Path, env, tmp_path: Path):
    study = tmp_path / "wide.csv"
    study.write_text(",".join(f"column {i}" for i in range(3000)) + "\n" + "1," * 2999 + "1\n")
    # The refusal listed all 3,000 names: a 40 KB line.
    line = refused(cli(["labels", "import", str(study), "--dataset", "mnist"], env))
    assert "not found" in line and "characters)" in line and len(line) < 2000


@pytest.mark.parametrize("kind", ["device", "pipe"])
def test_a_study_that_is_no_regular_file_is_one_line(home: Path, env, tmp_path: Path, kind):
    path = Path("/dev/zero") if kind == "device" else tmp_path / "study.csv"
    if kind == "pipe":
        os.mkfifo(path)  # no writer: opening it waits for ever
    # /dev/zero was hashed for ever, the pipe waited for a writer: both ran until killed.
    line = refused(cli(["labels", "import", str(path), "--dataset", "mnist"], env, timeout=60))
    assert "is no regular file (a pipe or a device)" in line


def test_a_file_name_too_long_from_a_results_csv_is_not_echoed_whole(home: Path, env, tmp_path):
    rows = [("a" * 5000 + ".npy", 3, 5, 12), *ROWS[1:]]
    folder = write_folder(tmp_path / "gb", rng_images(), rows=rows)
    args = ["import-results", str(folder), "--dataset", "mnist", "--generator-name", GEN]
    line = refused(cli(args, env))  # the OS's "File name too long", with the whole name
    assert "File name too long" in line and "characters)" in line and len(line) < 600
    nothing_written(home)


def test_an_address_that_is_no_address_is_one_line(env):
    line = refused(cli(["ui", "--address", "999.1.1.1", "--port", str(free_port())], env))
    assert "'999.1.1.1'" in line and "127.0.0.1" in line
    line = refused(cli(["ui", "--address", "192.0.2.1", "--port", str(free_port())], env))
    assert "not an address of this machine" in line


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ui_serves_whatever_streamlit_config_its_working_directory_holds(env, tmp_path: Path):
    work = tmp_path / "work"
    (work / ".streamlit").mkdir(parents=True)
    (work / ".streamlit" / "config.toml").write_text("[global]\ndevelopmentMode = true\n")
    log = tmp_path / "ui.log"
    with log.open("w") as out:
        # Its own process group: the dashboard and anything it starts end with the test.
        proc = subprocess.Popen(
            [*CLI, "ui", "--port", str(free_port())],
            env=env,
            cwd=work,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while "URL:" not in log.read_text() and proc.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        said = log.read_text()
        assert proc.poll() is None and "Traceback" not in said, said[-2000:]
    finally:
        with_group_ended(proc)


def with_group_ended(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=15)
            break
        except subprocess.TimeoutExpired:
            continue
    proc.wait(timeout=15)


def test_names_with_terminal_escapes_are_listed_with_the_escapes_visible(home: Path, env):
    name = f"a{TITLE}b{CLEAR}c{CSI}d"
    run = cli(["run", "--seeds", "1", "--generations", "1", "--quiet", "--name", name], env)
    assert run.returncode == 0, run.stderr
    cid = re.search(r"campaign (\S+) finished", run.stdout)[1]
    for args in (["campaigns"], ["show", cid]):
        for columns in ("250", "80"):
            p = cli(args, {**env, "COLUMNS": columns})
            assert p.returncode == 0, p.stderr
            out = p.stdout + p.stderr
            assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out, repr(out)
    wide = cli(["campaigns"], {**env, "COLUMNS": "250"}).stdout
    assert r"a\x1b]0;pwned\x07b\x1b[2Jc\x9b31md" in wide


def test_the_consoles_escape_control_characters_but_keep_their_own_styles():
    buf = io.StringIO()
    console = CliConsole(file=buf, force_terminal=True, color_system="standard", width=200)
    console.print(f"[bold]campaign[/] {TITLE}{CLEAR}", markup=True, highlight=False)
    console.print("error:", f"x{CSI}y", markup=False)
    t = Table("name")
    t.add_row(f"line\nbreak\t{TITLE}")
    console.print(t)
    out = buf.getvalue()
    assert "\x1b[1m" in out  # rich's own bold
    assert TITLE not in out and CLEAR not in out and "\x9b" not in out and "\x07" not in out
    # (rich drops the bell itself; the ESC that opened the title is what must not pass)
    assert r"\x1b]0;pwned\x1b[2J" in out and r"x\x9b31my" in out
    assert r"line\nbreak\t\x1b]0;pwned\x07" in out  # a cell stays on its line
