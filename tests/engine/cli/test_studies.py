"""`latentfuzz study` (engine/cli/studies.py): the effectiveness study's table prints each
generator's realism (FID and KID in the default classifier's features, not Inception's),
blank for a campaign without, and its CSV keeps them."""

from __future__ import annotations

import csv
from pathlib import Path

from typer.testing import CliRunner

from engine.cli.common import console
from engine.cli.main import app
from engine.studies.effectiveness import run_study
from store import Store
from store import metrics as sm


def test_study_prints_realism_per_generator_and_blank_where_none(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)  # piped: the table as wide as its content
    # The console takes its width at import: under xdist that is 80 columns.
    monkeypatch.setattr(console, "_width", 250)
    # The bundled zoo's trained generators: every seed viable, every campaign measured.
    study, table = run_study(
        tmp_path,
        seeds=2,
        generations=2,
        seed=1,
        generators=["mnist-vae", "mnist-gan"],
        presets=("high",),
    )
    vae, gan = table["campaign"]
    store = Store(tmp_path / "latentfuzz.duckdb")
    with store.write() as con:  # as a campaign from before realism has none
        con.execute("UPDATE campaign_metrics SET realism = NULL WHERE campaign_id = ?", [gan])
    r = CliRunner().invoke(app, ["study", "--show", study, "--home", str(tmp_path)])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    head = next(x for x in lines if "FID (classifier features, not Inception)" in x)
    assert "KID (classifier features, not Inception)" in head
    measured = sm.realism_table(store, [vae]).iloc[0]
    row = next(x for x in lines if "mnist-vae" in x).split("│")
    assert f"{measured['fid']:,.1f}" in row[-3] and f"{measured['kid']:,.2f}" in row[-2]
    gan_row = next(x for x in lines if "mnist-gan" in x).split("│")
    assert gan_row[-3].strip() == gan_row[-2].strip() == ""
    note = " ".join(r.output.split())
    assert "not Inception's" in note and "penultimate of mnist-convnet" in note
    assert "`latentfuzz validate ID` computes it" in note
    assert "None" not in r.output and "nan" not in r.output
    rows = list(csv.DictReader((tmp_path / "studies" / f"{study}.csv").open()))
    assert float(rows[0]["fid"]) == measured["fid"] and rows[1]["fid"] == ""
