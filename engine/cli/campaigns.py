"""`latentfuzz campaigns | show | resume | delete | rename | tag | note | doctor`: listing and
looking after campaigns
(and, for tags and notes, studies) in the store."""

from __future__ import annotations

from typing import Annotated

import typer
from rich import box
from rich.text import Text

from engine.cli.common import (
    HomeOpt,
    Table,
    console,
    err,
    fmt,
    shown_status,
    start_up_interruptible,
    status_line,
    stopped_in_close,
)
from engine.cli.common import open_store as _store
from engine.cli.models import size_text
from engine.core import threads as threads_
from engine.core.errors import LatentfuzzError
from engine.core.home import resolve_home
from engine.core.untrusted import quote
from store.failures import failed_as


def _campaign(store, cid: str) -> dict:
    # Deferred (start-up time: loads duckdb, pandas, pyarrow).
    from store import campaigns as sc

    c = sc.campaign(store, cid)
    if c is None:
        raise LatentfuzzError(f"no campaign {quote(cid)}; `latentfuzz campaigns` lists them")
    return c


def resume(
    campaign_id: Annotated[str, typer.Argument(help="a crashed or interrupted campaign")],
    home: HomeOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress line")] = False,
    threads: Annotated[
        int | None,
        typer.Option(help="torch threads [the cores this process may use, or $LATENTFUZZ_THREADS]"),
    ] = None,
) -> None:
    """Continue a crashed or interrupted campaign from its last written generation, to the
    same results an uninterrupted run gives."""
    choice = threads_.choose(option=threads)  # a bad value before torch loads
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.campaign.resume import resume_campaign
    from engine.campaign.runner import StoppedAfterClose

    threads_.apply(choice.threads)

    # Ctrl-C and SIGTERM: see start_up_interruptible (register, below).

    def on_progress(p) -> None:
        # A terminal's line, rewritten in place; on a pipe the carriage returns had made
        # one line of hundreds of fragments.
        if not quiet and err.is_terminal:
            err.print(f"gen {p.generation}/{p.generations} active {p.active}/{p.viable}", end="\r")

    h = resolve_home(home)
    stopped = False
    try:
        res = resume_campaign(h, campaign_id, progress=on_progress)
    except StoppedAfterClose as e:  # pressed while it closed: it closed all the same
        res, stopped = e.result, True
    except KeyboardInterrupt:
        stopped_in_close(h)
        raise  # in the start-up: start_up_interruptible says so
    console.print(
        f"campaign [bold]{res.campaign_id}[/] {res.status} ({res.evaluations:,} evaluations in all)"
    )
    console.print(status_line(res.summary))
    if res.status == "interrupted" or stopped:
        raise typer.Exit(130)


def delete(
    campaign_id: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask")] = False,
    home: HomeOpt = None,
) -> None:
    """Delete a campaign: its rows and its folder."""
    # Deferred (start-up time: loads duckdb, pandas).
    from store.admin import delete_campaign

    store = _store(home)
    c = _campaign(store, campaign_id)
    if not yes and not typer.confirm(
        f"delete campaign {campaign_id} ({c['name']}, {c['status']}) and its folder?"
    ):
        raise LatentfuzzError("nothing deleted (answer y, or pass --yes)")
    done = delete_campaign(store, resolve_home(home), campaign_id)
    console.print(
        f"deleted campaign {campaign_id}: {done['rows']:,} rows of the store and "
        f"{done['files']:,} files ({size_text(done['bytes'])}) removed",
        markup=False,
        highlight=False,
    )


def rename(campaign_id: str, name: str, home: HomeOpt = None) -> None:
    """Give a campaign a new name (its id stays)."""
    # Deferred (start-up time: loads duckdb, pandas).
    from store.admin import rename_campaign

    store = _store(home)
    _campaign(store, campaign_id)
    rename_campaign(store, campaign_id, name)
    console.print(f"{campaign_id} is now named {name!r}", markup=False)


def _target(store, id_: str, study: bool) -> str:
    """'study' or 'campaign', after checking that the id exists (one-line error if not)."""
    # Deferred (start-up time: loads duckdb, pandas, pyarrow).
    from store import campaigns as sc
    from store import labels

    if not study:
        if sc.campaign(store, id_) is None and labels.validity_study(store, id_) is not None:
            raise LatentfuzzError(f"{id_} is a label study, not a campaign; add --study")
        _campaign(store, id_)
        return "campaign"

    if labels.validity_study(store, id_) is None:
        raise LatentfuzzError(f"no study {quote(id_)}; `latentfuzz labels list` lists them")
    return "study"


def tag(
    id_: Annotated[str, typer.Argument(metavar="ID", help="a campaign (or a study, --study)")],
    tags: Annotated[list[str] | None, typer.Argument(help="tags to add")] = None,
    remove: Annotated[list[str] | None, typer.Option(help="a tag to take off")] = None,
    study: Annotated[bool, typer.Option("--study", help="ID is a label study")] = False,
    home: HomeOpt = None,
) -> None:
    """Add tags to a campaign or study (or --remove them); prints the tags it has now."""
    # Deferred (start-up time: loads duckdb, pandas).
    from store import annotations
    from store.connection import StoreError

    store = _store(home)
    kind = _target(store, id_, study)
    have = annotations.get(store, kind, id_)["tags"]
    wanted = [t for t in [*have, *(tags or [])] if t not in set(remove or [])]
    try:
        new = annotations.annotate(store, kind, id_, tags=wanted)
    except StoreError as e:
        raise LatentfuzzError(str(e)) from None
    console.print(f"{id_}: tags {', '.join(new['tags']) or '(none)'}", markup=False)


def note(
    id_: Annotated[str, typer.Argument(metavar="ID", help="a campaign (or a study, --study)")],
    text: Annotated[str, typer.Argument(help="the notes (replace the old ones; '' clears)")],
    study: Annotated[bool, typer.Option("--study", help="ID is a label study")] = False,
    home: HomeOpt = None,
) -> None:
    """Set the notes of a campaign or study."""
    # Deferred (start-up time: loads duckdb, pandas).
    from store import annotations
    from store.connection import StoreError

    store = _store(home)
    kind = _target(store, id_, study)
    try:
        annotations.annotate(store, kind, id_, notes=text)
    except StoreError as e:
        raise LatentfuzzError(str(e)) from None
    console.print(f"{id_}: notes saved ({len(text)} characters)", markup=False)


def doctor(
    fix: Annotated[bool, typer.Option("--fix", help="do the safe repairs first")] = False,
    home: HomeOpt = None,
) -> None:
    """Check the store and the home: keys, dead campaigns, orphan folders, missing images,
    dangling strip frames, finished campaigns without metrics, folders left by killed
    imports. Exit code 1 while anything is found."""
    # Deferred (start-up time: loads duckdb, pandas, pyarrow).
    from engine.io import doctor as doc
    from store import Store

    h = resolve_home(home)
    store = Store(h / "latentfuzz.duckdb")  # not open_store: doctor reports before it fixes
    if fix:
        for line in doc.fix(store, h):
            said = line if line.startswith(doc.NOT_FIXED) else f"fixed: {line}"
            console.print(said, markup=False, soft_wrap=True)  # paths stay whole
    findings = doc.check(store, h)
    for f in findings:
        typer.echo(f"{f.kind}\t{f.campaign or '-'}\t{f.detail}")  # tab-separated, for scripts
    if findings:
        raise typer.Exit(1)
    console.print("no anomaly: store and home are consistent")


#: Under a list that mixes strategies that stop at a seed's first failure with those
#: that search their whole budget: why some iteration cells are blank.
WHOLE_BUDGET = (
    "Iterations: blank for a campaign that searches its whole budget past the first failure "
    "(NSGA-II): its generations (budget) and evaluations per seed are given instead; "
    "`latentfuzz show ID` gives when each seed first failed."
)
#: Headers of a narrow terminal's table.
NARROW = {"iterations (ICST)": "ICST", "generations": "gens"}


def campaigns(home: HomeOpt = None) -> None:
    """List campaigns, newest first."""
    # Deferred (start-up time: loads duckdb, pandas, pyarrow).
    from store import campaigns as sc

    df = sc.list_campaigns(_store(home))
    if df.empty:
        console.print("no campaigns yet; start one with `latentfuzz run`")
        return
    cols = {  # header -> the row's text
        "id": lambda r: r.id,
        "name": lambda r: "" if r.name == r.id else str(r.name),
        "status": lambda r: shown_status(home, r.id, r.status),
        "dataset": lambda r: r.dataset,
        "generator": lambda r: r.generator,
        "classifier": lambda r: (
            str(r.classifier) + (f" vs {r.classifier_b}" if fmt(r.classifier_b) else "")
        ),
        "strategy": lambda r: f"{r.strategy}" + (f" {r.preset}" if fmt(r.preset) else ""),
        "viable": lambda r: f"{r.viable}/{r.n_seeds}",
        # "misclassified 3" read as three errors of A for a differential campaign.
        "failing": lambda r: (
            f"{r.misclassified}"
            + (f" ({p}%)" if (p := fmt(r.misclassified_pct, ".0f")) else "")
            + ("" if (k := failed_as(fmt(r.criterion))) == "misclassified" else f" {k}")
        ),
        # Blank for a search of the whole budget (NSGA-II): its seeds' iterations are the
        # generation a failure was first found in, no search length (WHOLE_BUDGET).
        "iterations (ICST)": lambda r: "" if r.whole_budget else fmt(r.iterations_icst, ".1f"),
        "iter. to failure": lambda r: "" if r.whole_budget else fmt(r.iterations_to_failure, ".1f"),
        "generations": lambda r: fmt(r.generation_budget, "d") if r.whole_budget else "",
        "evals/seed": lambda r: fmt(r.evaluations_per_seed, ",.0f") if r.whole_budget else "",
        "created": lambda r: str(r.created_at)[:16],
    }
    whole = df["whole_budget"].astype(bool)
    # Each strategy's own columns: the iterations for those that stop at a failure, the
    # generations and evaluations for those that search their whole budget.
    drop = {"generations", "evals/seed"} if not whole.any() else set()
    drop |= {"iterations (ICST)", "iter. to failure"} if whole.all() else set()
    cols = {k: f for k, f in cols.items() if k not in drop}
    narrow = console.width < 150
    if narrow:
        # A terminal of 80 columns cut every one of the 12 columns to "…": here the ones
        # that tell campaigns apart, without borders, the name last; `show ID` has the rest.
        keep = (
            "id",
            "status",
            "generator",
            "strategy",
            "failing",
            *(k for k in ("iterations (ICST)", "generations") if k in cols),
            *(("name",) if console.width >= 110 else ()),
        )
        cols = {NARROW.get(k, k): cols[k] for k in keep}
        if "ICST" in cols:
            cols["ICST"] = lambda r: "" if r.whole_budget else fmt(r.iterations_icst, ".0f")
    t = Table(*cols, box=None if narrow else box.HEAVY_HEAD, pad_edge=not narrow)
    for c in t.columns[:-1] if narrow else t.columns[:1]:
        c.no_wrap = True
    for r in df.itertuples():
        t.add_row(*(f(r) for f in cols.values()))
    console.print(t)
    if whole.any() and not whole.all():
        console.print(WHOLE_BUDGET, markup=False, highlight=False)


def show(campaign_id: str, home: HomeOpt = None) -> None:
    """Print a campaign's per-seed table and status line; for an interpolation campaign,
    Argus's figures per lambda too."""
    # Deferred (start-up time: loads duckdb, pandas, pyarrow).
    from store import campaigns as sc

    store = _store(home)
    c = sc.campaign(store, campaign_id)
    if c is None:
        raise LatentfuzzError(
            f"no campaign {quote(campaign_id)}; `latentfuzz campaigns` lists them"
        )
    # Names are the user's text: "[v2]" in one was read as markup and vanished.
    console.print(
        Text.assemble(
            (c["id"], "bold"),
            f" {shown_status(home, c['id'], c['status'])}",
            f"  {c['name']!r}" if c["name"] and c["name"] != c["id"] else "",
            f"  {c['dataset']} / {c['generator']} / {c['classifier']}",
            f" vs {c['classifier_b']}" if c.get("classifier_b") else "",
            f" / {c['strategy']} {c['preset'] or ''}  seed {c['random_seed']}",
        )
    )
    df = sc.seeds(store, campaign_id)
    summary = sc.summary(store, campaign_id)
    failed = failed_as((c["config"] or {}).get("criterion"))
    two = bool(c.get("classifier_b"))  # a differential campaign: both classifiers' answers

    def pred(r) -> str:
        a = fmt(r.final_pred, "d")
        return f"{a} / {fmt(r.final_pred_b, 'd')}" if two and a else a

    t = Table(
        "seed",
        "label",
        "viable",
        "status",
        *_length_heads(summary),
        "final pred (A / B)" if two else "final pred",
        "final fitness",
        "result image",
    )
    for r in df.itertuples():
        t.add_row(
            str(r.seed_idx),
            str(r.seed_label),
            "yes" if r.viable else "no",
            failed if r.status == "misclassified" else r.status,
            *_length_cells(summary, r),
            pred(r),
            fmt(r.final_fitness, ".3f"),
            fmt(r.result_image),
        )
    console.print(t)
    console.print(status_line(summary))
    if c["strategy"] == "interpolate":
        _per_lambda(store, campaign_id)
    if c["error"]:
        console.print(f"error: {c['error']}", markup=False, highlight=False)


def _length_heads(summary: dict) -> tuple[str, ...]:
    """A seed's search length, in its strategy's words: its iterations, or, where the
    search runs the whole budget past the first failure (NSGA-II), the generation a
    failure was first found in and the evaluations it cost ("iterations 1" after 10
    generations)."""
    return (
        ("first found (generation)", "evaluations") if summary["whole_budget"] else ("iterations",)
    )


def _length_cells(summary: dict, r) -> tuple[str, ...]:
    if not summary["whole_budget"]:
        return (fmt(r.iterations, "d"),)
    # A survivor's stored iterations is the budget: no failure was found in it.
    first = fmt(r.iterations, "d") if r.status == "misclassified" else ""
    return first, fmt(r.evaluations, ",.0f")


def _per_lambda(store, campaign_id: str) -> None:
    """Argus's figures by lambda (store/interpolation.py defines them), then pooled over
    the grid in a last row, labelled so: the campaign-level figures pool every lambda."""
    # Deferred (start-up time: loads duckdb, pandas, pyarrow).
    from store.interpolation import SHOWN, per_lambda, unmeasured

    df = per_lambda(store, campaign_id)
    if df.empty:
        return
    t = Table(
        "lambda", "seeds", "images", *(h for _, h, _ in SHOWN), title="Argus's figures per lambda"
    )
    for r in df.to_dict("records"):
        t.add_row(
            "pooled" if r["pooled"] else fmt(r["lambda"], ".2f"),
            fmt(r["seeds"], "d"),
            fmt(r["evaluations"], "d"),
            *(fmt(r[k], f) for k, _, f in SHOWN),
        )
    console.print(t)
    console.print(
        "ER: misclassified images / images; SR: seeds with a misclassified image / seeds; "
        "label diversity: distinct wrong labels per seed. Pooled: over every lambda.",
        markup=False,
        highlight=False,
    )
    for note in unmeasured(df):
        console.print(note, markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.command("resume")(start_up_interruptible(resume))
    for fn in (campaigns, show, delete, rename, tag, note, doctor):
        app.command()(fn)
