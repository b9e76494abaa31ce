"""The command line: run, campaigns, show, export, and errors for bad input."""

from __future__ import annotations

import csv
import io
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.helpers import CLI


def cli(args: list[str], env: dict[str, str], ok: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=300)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


#: A campaign of 3 seeds and 60 generations with a small custom step: finishes in seconds.
SMALL_RUN = [
    *("run", "--seeds", "3", "--generations", "60"),
    *("--perturbation", "custom", "--step", "0.05", "--seed", "1"),
]


def test_run_show_campaigns_export(home: Path, env, tmp_path: Path):
    p = cli(
        [
            *SMALL_RUN,
            "--quiet",
        ],
        env,
    )
    out = " ".join(p.stdout.split())
    m = re.search(
        r"viable seeds (\d) of 3, misclassified (\d) \(([\d.]+)% of viable\), "
        r"mean iterations \(viable seeds, survivors at budget\) ([\d.]+), "
        r"mean iterations to failure \(failing seeds\) ([\d.]+|n/a)",
        out,
    )
    assert m, out
    viable, mis = int(m[1]), int(m[2])
    assert float(m[3]) == round(100 * mis / viable, 1)
    cid = re.search(r"campaign (\S+) finished", out)[1]
    assert (home / "campaigns" / cid).is_dir()  # --home rule: LATENTFUZZ_HOME
    # Both counts, named: the dashboard's "search evaluations" is the second (the first
    # also counts the seeds' checks, and the two read as a discrepancy).
    from store import Store
    from store import campaigns as sc

    m = re.search(r"\(([\d,]+) model evaluations, ([\d,]+) of them by the search\)", out)
    assert m, out
    store = Store(home / "latentfuzz.duckdb")
    row = sc.campaign(store, cid)
    metrics = store.query("SELECT evaluations FROM campaign_metrics WHERE campaign_id = ?", [cid])
    assert int(m[1].replace(",", "")) == row["evaluations"]
    assert int(m[2].replace(",", "")) == metrics["evaluations"][0] < row["evaluations"]

    listing = cli(["campaigns"], {**env, "COLUMNS": "200"}).stdout
    assert cid in listing and "finished" in listing
    # At 80 columns the columns that tell campaigns apart, whole (every one was cut to …).
    narrow = cli(["campaigns"], {**env, "COLUMNS": "80"}).stdout
    row = next(line for line in narrow.splitlines() if cid in line)
    assert "…" not in narrow and max(map(len, narrow.splitlines())) <= 80
    assert row.split()[1:4] == ["finished", "mnist-vae", "ga"], row
    shown = cli(["show", cid], {**env, "COLUMNS": "200"}).stdout
    assert "viable seeds" in shown and "result image" in shown

    zpath = tmp_path / "out.zip"
    cli(["export", cid, "--zip", str(zpath)], env)
    with zipfile.ZipFile(zpath) as zf:
        names = zf.namelist()
        rows = list(csv.DictReader(io.StringIO(zf.read("seeds.csv").decode())))
        assert len(rows) == 3
        searched = [r for r in rows if r["result_image"]]
        assert len(names) == 1 + 3 * len(searched)  # seed, result and improvement strip
        stored = sc.seeds(store, cid).set_index("seed_idx")
        for r in searched:
            folder = "misclassified" if r["misclassified"] == "True" else "survived"
            stem = (
                f"{folder}/seed{int(r['seed_idx']):04d}_expected{r['seed_label']}"
                f"_predicted{r['final_pred']}_iter{r['iterations']}"
            )
            # seeds.csv names the files in the zip, not the home's paths.
            s = stored.loc[int(r["seed_idx"])]
            for kind in ("seed", "result", "improvements"):
                assert r[f"{kind}_image"] == f"{stem}_{kind}.png"
                assert zf.read(f"{stem}_{kind}.png") == (home / s[f"{kind}_image"]).read_bytes()
    assert not list(tmp_path.glob("*.part"))


def test_home_flag_and_yaml_config(tmp_path: Path, env):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "seeds: 2\nseed: 4\nstrategy_params:\n  generations: 3\n  population: 6\n  best_left: 2\n"
    )
    other = tmp_path / "elsewhere"
    p = cli(["run", "--config", str(cfg), "--home", str(other), "--quiet"], env)
    assert "of 2" in p.stdout
    assert (other / "latentfuzz.duckdb").is_file()


def test_bad_input_gets_a_clear_error_and_no_traceback(home: Path, env, tmp_path: Path):
    p = cli(["run", "--seeds", "2", "--best-left", "30"], env, ok=False)
    assert p.returncode == 2
    err = " ".join(p.stderr.split())
    assert "best_left=30 must be smaller than population=25" in err
    assert "Traceback" not in p.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("- just\n- a list\n")
    p = cli(["run", "--config", str(bad)], env, ok=False)
    assert "expected a mapping" in p.stderr and p.returncode == 2
    # A zip or an image given as the config: one line, not a UnicodeDecodeError traceback.
    binary = tmp_path / "d.zip"
    binary.write_bytes(b"PK\x03\x04\xba\xff\x00" * 20)
    for args in (["run", "--config", str(binary)], ["grid", str(binary)]):
        p = cli(args, env, ok=False)
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert "is not UTF-8 text (a binary file, or text in another encoding)" in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    p = cli(["show", "no-such-id"], env, ok=False)
    assert "no campaign 'no-such-id'" in p.stderr
    assert not (home / "campaigns").exists()


def test_every_bundled_generator_runs_like_the_vae(home: Path, env):
    from store import Store
    from store import campaigns as sc

    store = Store(home / "latentfuzz.duckdb")
    for gen in ("gan", "dm"):
        p = cli(
            [
                "run",
                "--generator",
                gen,
                "--seeds",
                "3",
                "--generations",
                "4",
                "--seed",
                "2",
                "--population",
                "6",
                "--best-left",
                "2",
                "--quiet",
            ],
            env,
        )
        assert "viable seeds" in " ".join(p.stdout.split())
        cid = sc.list_campaigns(store)["id"].iloc[0]
        c = sc.campaign(store, cid)
        assert c["generator"] == f"mnist-{gen}" and c["preset"] == "strong"
        seeds = sc.seeds(store, cid)
        gens = sc.generations(store, cid)
        assert (seeds["source_index"] == -1).all()  # sampled seeds with a class label
        assert len(gens) == int(seeds[seeds.viable]["iterations"].sum())


def imports(args: list[str], env: dict[str, str]) -> set[str]:
    """Top-level packages that `latentfuzz ARGS` imports (`python -X importtime`)."""
    p = subprocess.run(
        [sys.executable, "-X", "importtime", *CLI[1:], *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    rows = (x.split("|")[-1].strip() for x in p.stderr.splitlines() if x.startswith("import time:"))
    return {name.split(".")[0] for name in rows}


def test_fast_start_store_commands_skip_torch_and_a_vae_campaign_skips_diffusers(env):
    """Commands that only read the store start without torch; diffusers loads only for a dm."""
    for args in (["--help"], ["campaigns"], ["doctor"]):
        assert not {"torch", "diffusers"} & imports(args, env), args
    run = imports(
        [
            "run",
            "--seeds",
            "1",
            "--generations",
            "1",
            "--population",
            "4",
            "--best-left",
            "2",
            "--quiet",
        ],
        env,
    )
    assert "torch" in run and "diffusers" not in run


def test_help_lists_each_command_in_flowing_text(env):
    """The command list kept each docstring's line breaks: "...last written generation,
    to the" then "same results an uninterrupted run gives." on a line of its own."""
    from engine.cli.main import app

    def commands(t):
        yield from t.registered_commands
        for g in t.registered_groups:
            yield from commands(g.typer_instance)

    documented = [c for c in commands(app) if c.help or (c.callback and c.callback.__doc__)]
    assert documented and all(c.short_help and "\n" not in c.short_help for c in documented)
    out = cli(["--help"], {**env, "COLUMNS": "200"}).stdout
    assert "generation, to the same results an uninterrupted run gives." in out, out
    # Defaults in brackets are text: "[mnist]" vanished as a rich style tag.
    out = cli(["run", "--help"], {**env, "COLUMNS": "200"}).stdout
    assert "dataset name [mnist]" in out and "search strategy [ga]" in out, out


def test_a_mistyped_home_is_refused_not_created(env, tmp_path: Path):
    """`campaigns --home /nonexistent/deep` said "no campaigns yet" and made the folders
    and an empty store there."""
    deep = tmp_path / "nonexistent" / "deep"
    p = cli(["campaigns", "--home", str(deep)], env, ok=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert f"data directory {deep} (from --home) does not exist" in " ".join(p.stderr.split())
    assert not (tmp_path / "nonexistent").exists()
    # A new home in a folder that exists is made, as before; models list takes --home too.
    fresh = tmp_path / "fresh"
    assert "no campaigns yet" in cli(["campaigns", "--home", str(fresh)], env).stdout
    wide = {**env, "COLUMNS": "200"}
    assert "mnist-vae" in cli(["models", "list", "--home", str(fresh)], wide).stdout
    # Listing models reads a home, it does not make one (nor need one that can be made).
    gone = tmp_path / "nowhere" / "home"
    assert "mnist-vae" in cli(["models", "list", "--home", str(gone)], wide).stdout
    assert not (tmp_path / "nowhere").exists()


def test_usage_errors_are_one_line_that_names_the_help(env):
    """`--seeds abc`, an unknown command or option printed a usage line, a hint and a
    boxed panel of several lines."""
    for args, said in (
        (["run", "--seeds", "abc"], "Invalid value for '--seeds'"),
        (["run", "--seeds=x1"], "(got 'x1'; "),
        (["run", "--seeds", "5", "--seeds", "abc"], "(got 'abc'; "),  # the last one counts
        (["ui", "--port", "99999"], "less than or equal to 65535 (got '99999'; "),
        (["bench", "bogus"], "No such command 'bogus'"),
        (["run", "--nosuch"], "No such option: --nosuch"),
    ):
        p = cli(args, env, ok=False)
        assert p.returncode == 2, (args, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], lines
        assert "--help` lists what it takes" in lines[0]
    # A flag the chosen strategy has no setting for, named as the flag.
    p = cli(["run", "--strategy", "interpolate", "--generations", "3"], env, ok=False)
    assert p.returncode == 2 and "--generations: strategy 'interpolate' has no such" in p.stderr
    assert "lambda_steps" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    # --step for SINVAD is its own step: no "perturbation: custom" it has no setting for.
    cli(
        [
            "run",
            "--strategy",
            "sinvad",
            "--step",
            "0.1",
            "--seeds",
            "1",
            "--generations",
            "1",
            "--quiet",
        ],
        env,
    )
    # A group without a command still shows its help.
    p = cli(["labels"], env, ok=False)
    assert p.returncode == 2 and "import" in p.stdout + p.stderr


def test_the_campaign_list_names_failures_by_each_campaign_criterion(home: Path, env):
    """A differential campaign's failures were listed under "misclassified"."""
    from store import Store, create_campaign
    from tests.store.test_contract import campaign_row

    store = Store(home / "latentfuzz.duckdb")
    create_campaign(store, {**campaign_row("diff1"), "config": {"criterion": "disagree"}})
    create_campaign(store, campaign_row("plain1"))
    listing = cli(["campaigns"], {**env, "COLUMNS": "220"}).stdout
    assert "failing" in listing and "misclassified" not in listing
    lines = [line for line in listing.splitlines() if "1 " in line and "┃" not in line]
    rows = {line.split()[1]: line for line in lines}
    assert "A and B disagree" in rows["diff1"] and "disagree" not in rows["plain1"]


def test_a_ctrl_c_while_the_cli_is_imported_is_one_line(monkeypatch, capsys):
    # The console script's entry imports the CLI (typer, rich) inside its own guard: a
    # Ctrl-C in that first tenth of a second printed Python's traceback.
    import builtins
    import tomllib

    import pytest

    import engine.entry

    real = builtins.__import__

    def interrupted(name, *a, **k):
        if name == "engine.cli.main":
            raise KeyboardInterrupt
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    with pytest.raises(SystemExit) as e:
        engine.entry.main()
    assert e.value.code == 130 and capsys.readouterr().err == "interrupted\n"
    monkeypatch.setattr(builtins, "__import__", real)
    root = Path(__file__).resolve().parents[3]
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["latentfuzz"] == "engine.entry:main"


def test_walkthrough_inputs_get_one_line_that_names_the_mistake(home: Path, env, tmp_path: Path):
    """Each was a traceback, a silent run or a misleading line (a walkthrough's findings)."""
    folder = tmp_path / "models"
    folder.mkdir()
    yaml = {
        "seeds.yaml": "seeds: true\n",
        "name.yaml": "name: 123\n",
        "gens.yaml": "strategy_params: {generations: false}\n",
    }
    for f, text in yaml.items():
        (tmp_path / f).write_text(text)
    cases = {
        (
            "run",
            "--strategy",
            "nosuch",
        ): "strategy 'nosuch' unknown; expected one of ['fgsm', 'ga',",
        ("run", "--classifier", str(folder)): f"classifier file {folder} is a folder",
        (
            "run",
            "--generator",
            "gan",
            "--guidance",
            "2",
        ): "generator mnist-gan (gan) has no option guidance (its options: none)",
        ("run", "--config", str(tmp_path / "seeds.yaml")): "seeds is true, expected a number",
        ("run", "--config", str(tmp_path / "gens.yaml")): "generations is false, expected a",
        ("run", "--config", str(tmp_path / "name.yaml")): "put a name that is a number in quotes",
    }
    for args, says in cases.items():
        p = cli([*args, "--seeds", "1"] if "--config" not in args else list(args), env, ok=False)
        err = " ".join(p.stderr.split())
        assert p.returncode == 2 and says in err, (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert not (home / "campaigns").exists() or not any((home / "campaigns").iterdir())


def test_names_are_printed_as_given_not_as_markup(home: Path, env, tmp_path: Path):
    name = "ablation [v2] [bold red]lr=0.1[/bold red]"
    p = cli(
        [
            *SMALL_RUN,
            "--name",
            name,
            "--quiet",
        ],
        env,
    )
    cid = re.search(r"campaign (\S+) finished", " ".join(p.stdout.split()))[1]
    assert name in cli(["campaigns"], {**env, "COLUMNS": "250"}).stdout  # the name column shown
    assert repr(name) in cli(["show", cid], env).stdout.splitlines()[0]
    cli(["labels", "create", "--campaign", cid, "--name", name, "--gold-rate", "0"], env)
    assert name in cli(["labels", "report"], env).stdout
    bundle = tmp_path / "c.lfz"
    cli(["export", cid, "--bundle", str(bundle)], env)
    p = cli(["import", str(bundle), "--as", ""], env, ok=False)  # was taken as no --as
    assert p.returncode == 2 and "campaign id '' is not allowed" in p.stderr, p.stderr


def test_models_measure_leaves_the_bundled_cards_alone_unless_asked(env):
    """`models measure` with no name rewrote models/mnist-*/card.json with this machine's
    timings, dropping fields (a walkthrough's finding)."""
    from engine.models.zoo import models_dir

    before = {p: p.read_bytes() for p in models_dir().glob("*/card.json")}
    p = cli(["models", "measure"], env, ok=False)
    assert p.returncode == 2 and "no generator of yours for dataset mnist" in p.stderr
    p = cli(["models", "measure", "mnist-vae"], env, ok=False)
    assert p.returncode == 2 and "pass --bundled to measure it again" in p.stderr
    assert {p: p.read_bytes() for p in models_dir().glob("*/card.json")} == before
