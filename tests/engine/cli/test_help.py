"""engine/cli/main.py and engine/cli/strategy_flags.py: `latentfuzz --help` in panels,
and `run`'s strategy flags made from each strategy's Params."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from engine.cli.main import PANELS, app, arrange
from engine.cli.strategy_flags import parse_params, strategy_options
from engine.core.errors import LatentfuzzError
from engine.search.strategies import STRATEGIES
from tests.engine.cli.test_cli import cli

runner = CliRunner()


def test_help_shows_the_panels_in_order_and_every_command_once():
    out = runner.invoke(app, ["--help"], env={"COLUMNS": "120"}).output
    at = [out.index(f"─ {title} ") for title in PANELS]
    assert at == sorted(at), at
    for names in PANELS.values():
        for name in names:
            assert f"│ {name} " in out, name
    assert "│ zoo " not in out  # the older name of `models`, still accepted
    assert runner.invoke(app, ["zoo", "list"]).exit_code == 0


def test_a_command_in_no_panel_is_refused():
    t = typer.Typer()
    t.command()(lambda: None)
    t.command("new-thing")(lambda: None)
    with pytest.raises(RuntimeError, match="new-thing"):
        arrange(t, {"Campaigns": ("<lambda>",)})


def test_help_loads_neither_torch_nor_duckdb():
    code = (
        "import sys; sys.argv = ['latentfuzz', '--help']\n"
        "from engine.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('torch', 'duckdb', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    ).stdout
    assert out.strip().endswith("[]"), out[-500:]


def test_every_scalar_setting_of_every_strategy_is_a_flag_with_its_defaults():
    options = strategy_options(taken={"seed"})
    for name in STRATEGIES.names():
        for field, info in STRATEGIES.get(name).Params.model_fields.items():
            if info.annotation in (int, float, str, bool) or field in options:
                assert field in options, (name, field)
    # One flag for a setting several strategies share, its defaults named per strategy.
    help_ = options["generations"][0].__metadata__[0].help
    assert "ga 250" in help_ and "nsga2 30" in help_
    assert options["best_left"][0].__metadata__[0].hidden  # the GA's elites, by its old name


def test_run_help_lists_the_strategy_settings():
    out = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    for flag in ("--elites", "--lambda-steps", "--eta-c", "--mask-p", "--param"):
        assert flag in out, flag
    assert "--best-left" not in out


def test_the_old_flag_and_p_key_value_reach_the_strategy(home, env):
    bad = cli(["run", "--seeds", "2", "--best-left", "30", "--quiet"], env, ok=False)
    assert bad.returncode == 2 and "best_left=30 must be smaller than population=25" in bad.stderr
    also = cli(["run", "--seeds", "2", "-p", "elites=30", "--quiet"], env, ok=False)
    assert also.returncode == 2 and "elites=30 must be smaller than population=25" in also.stderr
    other = cli(["run", "--strategy", "interpolate", "--generations", "3"], env, ok=False)
    assert other.returncode == 2
    assert "--generations: strategy 'interpolate' has no such setting" in other.stderr


def test_p_key_value_reads_yaml_scalars_and_refuses_a_missing_equals_sign():
    assert parse_params(["generations=3", "embedding=umap", "step=0.5", "seconds=null"]) == {
        "generations": 3,
        "embedding": "umap",
        "step": 0.5,
        "seconds": None,
    }
    with pytest.raises(LatentfuzzError, match="expected KEY=VALUE"):
        parse_params(["generations"])


def test_a_setting_given_as_a_flag_and_with_p_is_refused_not_overridden(home, env):
    p = cli(
        ["run", "--seeds", "1", "--generations", "3", "-p", "generations=2", "--quiet"],
        env,
        ok=False,
    )
    assert p.returncode == 2 and "--generations 3 and -p generations=2 name one setting" in p.stderr
    unknown = cli(["run", "-p", "nope=3", "--quiet"], env, ok=False)
    assert (
        unknown.returncode == 2 and "-p nope: strategy 'ga' has no such setting" in unknown.stderr
    )
    assert "best_left" not in unknown.stderr  # an old name is accepted, not offered
    with pytest.raises(LatentfuzzError, match="expected KEY=VALUE"):
        parse_params(["generations="])


def test_study_show_of_an_unknown_study_lists_the_studies_as_words(home, env):
    p = cli(["study", "--show", "nope"], env, ok=False)
    assert p.returncode == 2
    assert "no study 'nope'; the studies are: none yet" in p.stderr and "[" not in p.stderr
