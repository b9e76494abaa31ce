"""The `latentfuzz` command line: the app, its help panels, and one-line errors.

Each command group lives in its own module and registers itself here; PANELS orders
`latentfuzz --help` into the groups a user scans for."""

from __future__ import annotations

import sys
from typing import Any

import typer
from typer.core import TyperGroup

from engine.cli import (
    bench,
    bundle,
    campaigns,
    data,
    differential,
    escape,
    import_results,
    labels,
    pollution,
    repair,
    run,
    select,
    studies,
    train,
    ui,
    zoo,
)
from engine.cli.common import err, escape_help, one_line, received
from engine.core.errors import LatentfuzzError
from engine.core.untrusted import quote

try:
    from typer._click import exceptions as click_errors
except ImportError:  # a typer that uses click itself
    from click import exceptions as click_errors
from store.errors import StoreBusy, StoreError


class PanelGroup(TyperGroup):
    """Lists commands and groups in PANELS' order (typer lists commands before groups, so
    a panel of groups came last whatever its place)."""

    def list_commands(self, ctx: Any) -> list[str]:
        return sorted(super().list_commands(ctx), key=lambda n: ORDER.get(n, len(ORDER)))


app = typer.Typer(
    cls=PanelGroup,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Test image classifiers by searching generative models' latent spaces.",
)
for module in (
    run,
    campaigns,
    ui,
    differential,
    studies,
    bundle,
    escape,
    pollution,
    select,
    import_results,
    zoo,
    train,
    data,
    bench,
    repair,
):
    module.register(app)
app.add_typer(labels.labels_app, name="labels")

#: `latentfuzz --help`'s panels, in order, and each panel's commands in order.
PANELS: dict[str, tuple[str, ...]] = {
    "Campaigns": (
        "run",
        "campaigns",
        "show",
        "resume",
        "validate",
        "rename",
        "tag",
        "note",
        "delete",
        "ui",
    ),
    "Studies and grids": ("study", "grid", "escape", "diff-study", "pollution-study", "select"),
    "Models and data": ("models", "train", "repair", "data"),
    "Labelling": ("labels",),
    "Import and export": ("export", "import", "import-results"),
    "Maintenance": ("doctor", "bench"),
}
ORDER = {name: i for i, name in enumerate(n for names in PANELS.values() for n in names)}


def command_name(info: typer.models.CommandInfo | typer.models.TyperInfo) -> str:
    """The name a command or group is typed as."""
    if isinstance(info, typer.models.TyperInfo):
        return info.name or ""
    return info.name or info.callback.__name__.replace("_", "-")


def arrange(t: typer.Typer, panels: dict[str, tuple[str, ...]]) -> None:
    """Put every visible command and group of `t` in its panel; a command that no panel
    names is a mistake this refuses."""
    panel = {name: p for p, names in panels.items() for name in names}
    for infos in (t.registered_commands, t.registered_groups):
        missing = [command_name(i) for i in infos if not i.hidden and command_name(i) not in panel]
        if missing:
            raise RuntimeError(f"commands in no help panel: {missing}; add them to PANELS")
        for info in infos:
            info.rich_help_panel = panel.get(command_name(info))


arrange(app, PANELS)


def flow_command_lists(t: typer.Typer) -> None:
    """Each command's line in its group's list: its docstring's first paragraph as one
    flowing text. Typer kept the docstring's line breaks there, so the list broke lines
    after a few words ("from its last written generation, to the" / "same results ...")."""
    for info in t.registered_commands:
        doc = info.help or (info.callback.__doc__ if info.callback else None)
        if info.short_help is None and doc:
            info.short_help = " ".join(doc.strip().split("\n\n")[0].split())
    for group in t.registered_groups:
        flow_command_lists(group.typer_instance)


flow_command_lists(app)


def main() -> None:
    # Not engine.datasets' DatasetError (a LatentfuzzError), whose import pulls in torch,
    # nor store.connection's module, which pulls in DuckDB and pandas.

    try:
        # Not standalone: typer would print a usage error as a boxed panel of several
        # lines; here it is one line, as every other error.
        command = typer.main.get_command(app)
        escape_help(command)
        code = command(standalone_mode=False)
    except getattr(click_errors, "NoArgsIsHelpError", ()):
        sys.exit(2)  # the group's help, which typer has printed (as standalone mode does)
    except click_errors.ClickException as e:
        where = getattr(getattr(e, "ctx", None), "command_path", None) or "latentfuzz"
        err.print("[red]error:[/] ", end="")
        got = received(e, sys.argv[1:])
        got = f"got {quote(got)}; " if got is not None else ""
        err.print(
            f"{' '.join(e.format_message().split())} ({got}`{where} --help` lists what it takes)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        sys.exit(e.exit_code)
    except typer.Abort:
        err.print("aborted", markup=False, highlight=False)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 - a bug's traceback is re-raised below
        if str(e) == "Query interrupted" or type(e).__name__ == "InterruptException":
            # DuckDB's word for a Ctrl-C or SIGTERM that lands inside a query (and for an
            # interrupted connection): a bundle import stopped in its closing CHECKPOINT
            # ended in a traceback. Its transaction was rolled back, or had committed.
            err.print("interrupted", markup=False, highlight=False)
            sys.exit(130)
        said = str(e) if isinstance(e, (LatentfuzzError, StoreError, StoreBusy)) else one_line(e)
        if said is None:
            raise
        # One line, no traceback; markup off so that paths with [brackets] print as they are.
        err.print("[red]error:[/] ", end="")
        err.print(said, markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    if isinstance(code, int) and code:
        sys.exit(code)  # typer.Exit(n) and Ctrl-C's 130, which it returns when not standalone


if __name__ == "__main__":
    main()
