"""`latentfuzz resume | delete | rename | tag | note | doctor`: looking after campaigns
(and, for tags and notes, studies) in the store."""

from __future__ import annotations

from typing import Annotated

import typer

from engine.cli.common import HomeOpt, console, err, start_up_interruptible
from engine.cli.common import open_store as _store
from engine.core.errors import LatentfuzzError
from engine.core.home import resolve_home


def _campaign(store, cid: str) -> dict:
    from store import campaigns as sc

    c = sc.campaign(store, cid)
    if c is None:
        raise LatentfuzzError(f"no campaign {cid!r}; `latentfuzz campaigns` lists them")
    return c


def resume(
    campaign_id: Annotated[str, typer.Argument(help="a crashed or interrupted campaign")],
    home: HomeOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress line")] = False,
) -> None:
    """Continue a crashed or interrupted campaign from its last written generation, to the
    same results an uninterrupted run gives."""
    from engine.campaign.resume import resume_campaign
    from engine.campaign.runner import StoppedAfterClose
    from engine.cli.main import status_line, stopped_in_close

    # Ctrl-C and SIGTERM: see start_up_interruptible (register, below).

    def on_progress(p) -> None:
        # A terminal's line, rewritten in place; on a pipe the carriage returns had made
        # one line of hundreds of fragments.
        if not quiet and err.is_terminal:
            err.print(f"gen {p.generation}/{p.generations} active {p.active}/{p.viable}",
                      end="\r")  # fmt: skip

    h = resolve_home(home)
    stopped = False
    try:
        res = resume_campaign(h, campaign_id, progress=on_progress)
    except StoppedAfterClose as e:  # pressed while it closed: it closed all the same
        res, stopped = e.result, True
    except KeyboardInterrupt:
        stopped_in_close(h)
        raise  # in the start-up: start_up_interruptible says so
    console.print(f"campaign [bold]{res.campaign_id}[/] {res.status} ({res.evaluations:,} "
                  "evaluations in all)")  # fmt: skip
    console.print(status_line(res.summary))
    if res.status == "interrupted" or stopped:
        raise typer.Exit(130)


def delete(
    campaign_id: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask")] = False,
    home: HomeOpt = None,
) -> None:
    """Delete a campaign: its rows and its folder."""
    from store.admin import delete_campaign

    store = _store(home)
    c = _campaign(store, campaign_id)
    if not yes and not typer.confirm(
        f"delete campaign {campaign_id} ({c['name']}, {c['status']}) and its folder?"
    ):
        raise LatentfuzzError("nothing deleted (answer y, or pass --yes)")
    delete_campaign(store, resolve_home(home), campaign_id)
    console.print(f"deleted {campaign_id}")


def rename(campaign_id: str, name: str, home: HomeOpt = None) -> None:
    """Give a campaign a new name (its id stays)."""
    from store.admin import rename_campaign

    store = _store(home)
    _campaign(store, campaign_id)
    rename_campaign(store, campaign_id, name)
    console.print(f"{campaign_id} is now named {name!r}", markup=False)


def _target(store, id_: str, study: bool) -> str:
    """'study' or 'campaign', after checking that the id exists (one-line error if not)."""
    from store import campaigns as sc
    from store import labels

    if not study:
        if sc.campaign(store, id_) is None and labels.validity_study(store, id_) is not None:
            raise LatentfuzzError(f"{id_} is a label study, not a campaign; add --study")
        _campaign(store, id_)
        return "campaign"

    if labels.validity_study(store, id_) is None:
        raise LatentfuzzError(f"no study {id_!r}; `latentfuzz labels list` lists them")
    return "study"


def tag(
    id_: Annotated[str, typer.Argument(metavar="ID", help="a campaign (or a study, --study)")],
    tags: Annotated[list[str] | None, typer.Argument(help="tags to add")] = None,
    remove: Annotated[list[str] | None, typer.Option(help="a tag to take off")] = None,
    study: Annotated[bool, typer.Option("--study", help="ID is a label study")] = False,
    home: HomeOpt = None,
) -> None:
    """Add tags to a campaign or study (or --remove them); prints the tags it has now."""
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
    dangling strip frames. Exit code 1 while anything is found."""
    from engine.io import doctor as doc
    from store import Store

    h = resolve_home(home)
    store = Store(h / "latentfuzz.duckdb")  # not open_store: doctor reports before it fixes
    if fix:
        for line in doc.fix(store, h):
            console.print(f"fixed: {line}", markup=False, soft_wrap=True)  # paths stay whole
    findings = doc.check(store, h)
    for f in findings:
        typer.echo(f"{f.kind}\t{f.campaign or '-'}\t{f.detail}")  # tab-separated, for scripts
    if findings:
        raise typer.Exit(1)
    console.print("no anomaly: store and home are consistent")


def register(app: typer.Typer) -> None:
    app.command("resume")(start_up_interruptible(resume))
    for fn in (delete, rename, tag, note, doctor):
        app.command()(fn)
