"""`latentfuzz import BUNDLE` and `latentfuzz grid GRID.yaml` (plus `export --bundle`, whose
command stays in cli.py beside the zip export)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Group
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from engine.cli.common import HomeOpt, Table, console, err, open_store, warn_unfinished
from engine.core import threads as threads_
from engine.core.errors import LatentfuzzError
from engine.core.home import resolve_home
from store import interrupts


def export_bundle_cmd(campaign_id: str, out: Path, home: Path | None) -> None:
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.io.bundle import export_bundle

    m = export_bundle(open_store(home), resolve_home(home), campaign_id, out)
    n = sum(1 for f in m["files"] if f.startswith("files/"))
    console.print(
        f"wrote bundle {out} ({sum(m['rows'].values())} rows, {n} files, schema "
        f"{m['schema_version']})",
        markup=False,
    )


def import_(
    bundle: Annotated[Path, typer.Argument(help="a bundle written by `export --bundle`")],
    as_id: Annotated[
        str | None, typer.Option("--as", help="import under this campaign id (a copy)")
    ] = None,
    home: HomeOpt = None,
) -> None:
    """Import a campaign bundle: hashes and schema checked, rows in one transaction."""
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.io.bundle import import_bundle

    cid = import_bundle(open_store(home), resolve_home(home), bundle, as_id)
    console.print(f"imported campaign {cid} from {bundle}", markup=False)


def grid(
    spec_file: Annotated[Path, typer.Argument(metavar="GRID.yaml", help="base config and axes")],
    workers: Annotated[
        int | None,
        typer.Option(
            help="cells at a time: local processes [1] (0: in this process); with --ray, "
            "tasks in flight [the cluster's CPUs]"
        ),
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option(help="run cells as Ray tasks: 'auto' or the cluster's HOST:6379"),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="grid folder [HOME/grids/NAME]")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress display")] = False,
    home: HomeOpt = None,
    threads: Annotated[
        int | None,
        typer.Option(
            help="torch threads per cell [the cores this process may use / --workers, "
            "or $LATENTFUZZ_THREADS]"
        ),
    ] = None,
) -> None:
    """Run every cell of a grid (base config x axes), each as its own process; re-running
    the same grid runs only the cells not yet in the store."""
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.studies.grid import run_grid, worker_threads
    from engine.studies.spec import load_grid

    spec = load_grid(spec_file)
    h = resolve_home(home)
    if workers is not None and workers >= 0 and ray is None:
        share = threads_.note(worker_threads(workers, threads))  # a bad --threads: refused
        if share:
            err.print(share, markup=False, soft_wrap=True)
    interrupts.stop_raises()
    view = GridView(quiet)
    with view:
        run = run_grid(
            spec, h, workers=workers, ray=ray, out=out, on_status=view.update, threads=threads
        )
    counts = {s: list(run.status.values()).count(s) for s in ("done", "failed", "queued")}
    console.print(
        f"grid {run.grid}{' stopped' if run.stopped else ''}: {counts['done']} of "
        f"{len(run.cells)} cells done ({len(run.ran)} run now, {len(run.skipped)} done before, "
        f"{len(run.imported)} imported); folder {run.folder}",
        markup=False,
    )
    if run.stopped:
        err.print(
            f"stopped by Ctrl-C; `latentfuzz grid {spec_file}` runs the "
            f"{counts['queued']} cells not run",
            markup=False,
            soft_wrap=True,
        )
    for cell in run.cells:
        if run.status[cell.id] == "failed":
            err.print(
                f"failed {cell.id} ({cell.label()}): {run.errors.get(cell.id, '')}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
    if counts["done"]:
        console.print(
            f"its campaigns form the group {run.grid}: the dashboard's Compare page "
            f"shows them by axis",
            markup=False,
        )
    if run.stopped:
        raise typer.Exit(130)
    if counts["failed"]:
        raise typer.Exit(1)


class GridView:
    """An overall progress bar with counts per status, and a table of the cells (the
    first 40) with their status, updated live on stderr."""

    MAX_ROWS = 40

    def __init__(self, quiet: bool) -> None:

        self.quiet = quiet
        self.bar = Progress(
            TextColumn("[bold]grid"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            console=err,
        )
        self.task = self.bar.add_task("grid", total=None, info="")
        self.rows: dict[str, tuple[str, str]] = {}
        self.live = None

    def __enter__(self) -> GridView:
        return self

    def _start(self) -> None:
        """Drawn at the first change of a cell: a grid whose cells were all done before
        changes none, and showed an empty "0/?" bar."""

        self.live = Live(self._render(), console=err, refresh_per_second=4)
        self.live.__enter__()

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.update(self._render())
            self.live.__exit__(*exc)
            if not err.is_terminal:  # a log file: the summary starts on its own line
                err.print()

    def update(self, cell, status: str, run) -> None:
        self.rows = {c.id: (c.label(), run.status[c.id]) for c in run.cells}
        n = {s: list(run.status.values()).count(s) for s in ("queued", "running", "done", "failed")}
        info = "  ".join(f"{k} {v}" for k, v in n.items())
        self.bar.update(
            self.task, total=len(run.cells), completed=n["done"] + n["failed"], info=info
        )
        if self.live is None and not self.quiet:
            self._start()
        if self.live is not None:
            self.live.update(self._render())

    def _render(self):

        t = Table("cell", "values", "status", box=None)
        colour = {"done": "green", "failed": "red", "running": "yellow", "queued": "dim"}
        for cid, (label, status) in list(self.rows.items())[: self.MAX_ROWS]:
            t.add_row(cid, label, Text(status, style=colour[status]))
        return Group(self.bar, t) if self.rows else self.bar


def export(
    campaign_id: str,
    zip_path: Annotated[
        Path | None, typer.Option("--zip", help="zip of image pairs and seeds.csv to write")
    ] = None,
    bundle: Annotated[
        Path | None,
        typer.Option("--bundle", help="bundle to write (a zip): rows, images, manifest"),
    ] = None,
    home: HomeOpt = None,
) -> None:
    """Write seed/result image pairs and the per-seed CSV to a zip file (--zip), or the
    whole campaign as a bundle that `latentfuzz import` reads (--bundle)."""
    # Deferred (start-up time: loads duckdb, pandas, pyarrow).
    from engine.io.export import export_zip
    from store import campaigns as sc

    if (zip_path is None) == (bundle is None):
        raise LatentfuzzError("give one of --zip FILE (image pairs) or --bundle FILE (campaign)")
    h = resolve_home(home)
    store = open_store(home)
    c = sc.campaign(store, campaign_id)
    if c is not None and not (bundle is not None and c["status"] == "running"):
        warn_unfinished(home, campaign_id, c["status"])  # a bundle of a running one is refused
    if bundle is not None:
        export_bundle_cmd(campaign_id, bundle, home)
        return
    n = export_zip(store, h, campaign_id, zip_path)
    console.print(f"wrote {zip_path} ({n} image pairs + seeds.csv)", markup=False)


def register(app: typer.Typer) -> None:
    app.command()(export)
    app.command("import")(import_)
    app.command()(grid)
