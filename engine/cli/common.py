"""What every `latentfuzz` command group shares: consoles, the --home option, the store,
table cells."""

from __future__ import annotations

import contextlib
import errno
import functools
import inspect
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console, ConsoleDimensions
from rich.markup import escape
from rich.segment import Segment
from rich.table import Table as _RichTable
from rich.text import Text

from engine.core.errors import yaml_problem
from engine.core.home import ENV_VAR, db_path, resolve_home
from engine.core.untrusted import QUOTE_LIMIT, quote
from store import interrupts
from store.failures import failed_as
from store.liveness import RESUMABLE, status

#: The width of output that goes to a file or a pipe.
PIPED_WIDTH = 400

#: Control characters (C0, DEL, C1), each as its visible escape: a campaign name holding
#: "\x1b]0;pwned\x07" retitled the terminal of whoever listed campaigns, and "\x1b[2J"
#: cleared it. Names, notes and errors come from the store, which bundles fill.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}
_CONTROLS.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})
#: What the consoles escape: all but line ends, which rich writes itself (and which it
#: strips from a Text, so a name cannot bring them).
_UNLESS_LINE_END = {k: v for k, v in _CONTROLS.items() if k not in (ord("\n"), ord("\r"))}


def visible(text: str) -> str:
    """`text` with every control character written as its escape (an ESC as `\\x1b`): for a
    value that must stay on its line, such as a table cell."""
    return text.translate(_CONTROLS)


class CliConsole(Console):
    """A console whose output, when it goes to a file or a pipe and COLUMNS does not say
    otherwise, is as wide as its content: rich would fit it to 80 columns, cutting the
    image paths and ids that a script or `grep` reads out of a table to "campai…"."""

    def _size(self) -> ConsoleDimensions:
        d = Console.size.fget(self)
        if self._width is None and not self.is_terminal and "COLUMNS" not in os.environ:
            return ConsoleDimensions(PIPED_WIDTH, d.height)
        return d

    size = property(_size, Console.size.fset)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        # Every text this console writes, whatever printed it: the escapes a style or a
        # progress bar needs are rich's own control segments, or rendered from a style.
        shown = (
            s if s.control else Segment(s.text.translate(_UNLESS_LINE_END), *s[1:]) for s in buffer
        )
        return super()._render_buffer(shown)


console = CliConsole()
err = CliConsole(stderr=True)


class Table(_RichTable):
    """A rich table whose text cells are printed as they are: rich read "[red]" or "[x]" in
    a campaign, study or folder name as markup and dropped it from the row. Control
    characters in them are made visible (a line break in a name broke its row). A cell
    meant to be styled is given as a `Text`."""

    def add_row(self, *cells: Any, **kwargs: Any) -> None:
        super().add_row(*(Text(visible(c)) if isinstance(c, str) else c for c in cells), **kwargs)


HomeOpt = Annotated[
    Path | None,
    typer.Option("--home", help=f"data directory [default: ${ENV_VAR} or ~/.latentfuzz]"),
]


def open_store(home: Path | None):
    """The store of the data directory chosen by --home or the environment, with recovery
    files ingested (store/recovery.py) and dead `running` campaigns marked `crashed`
    (store/liveness.py)."""
    # Deferred (start-up time: loads duckdb, pandas, pyarrow).
    from store import Store, recovery
    from store.campaigns import reap

    store = Store(db_path(resolve_home(home)))
    recovery.ingest(store)  # rows a campaign saved when its user stopped it waiting
    reap(store)
    return store


def shown_status(home: Path | None, cid: str, stored: str) -> str:
    """A campaign's status as readers report it: `crashed` when its process is gone, also
    in a read-only store that could not be marked."""

    return status(resolve_home(home), cid, stored)


def warn_unfinished(home: Path | None, cid: str, stored: str) -> None:
    """One line on stderr when a campaign is not finished, so exports and studies say so."""
    st = shown_status(home, cid, stored)
    if st == "crashed":
        msg = f"campaign {cid} crashed; using what it wrote (`latentfuzz resume {cid}` resumes it)"
    elif st in ("running", "interrupted"):
        msg = f"campaign {cid} is {st}; using what it has written so far"
    else:
        return
    err.print(f"warning: {msg}", markup=False, highlight=False, soft_wrap=True)


def fmt(v: Any, spec: str = "") -> str:
    """A table cell: empty for missing values (None, NaN, pandas NA)."""
    # Deferred (start-up time: loads pandas).
    import pandas as pd

    if v is None or pd.isna(v):
        return ""
    return format(int(v), "d") if spec == "d" else format(v, spec)


def one_line(e: BaseException, flags: bool = False) -> str | None:
    """A file-system, YAML or validation error as the one line a user gets (what was
    received, what was expected, the fix), or None for a bug, which keeps its traceback.
    These came through as tracebacks: a folder given where a file goes, a missing
    folder, an unclosed bracket in a YAML file, a pydantic dump for `--k 0`. `flags`:
    name a setting as the command's option (`--gold-rate`)."""
    if isinstance(e, OSError):
        if not e.filename:
            return str(e)
        # By cause: "a folder that exists and that you may write" misled about input files.
        fix = {
            errno.EISDIR: "it is a folder; give the path of a file",
            errno.ENOENT: "no such file or folder; check the path",
            errno.ENOTDIR: "a part of the path is a file, not a folder; check the path",
            errno.EACCES: "permission denied; pick a path you may read and write",
            errno.EPERM: "permission denied; pick a path you may read and write",
            errno.ENOSPC: "no space left on the device; free some space",
        }.get(e.errno, f"{e.strerror or e}; check the path")
        # A name from a shared file (a results CSV's 5,000-character image name) is cut.
        name = os.fsdecode(e.filename) if isinstance(e.filename, (str, bytes)) else e.filename
        shown = quote(name) if len(str(name)) > QUOTE_LIMIT else name
        return f"cannot use {shown}: {fix}"
    if type(e).__module__.startswith("yaml"):
        return yaml_problem(e)
    if type(e).__name__ == "ValidationError" and hasattr(e, "errors"):
        said = []
        for err in e.errors():
            msg = err["msg"].removeprefix("Value error, ")
            if not err["loc"]:  # a rule across settings: its message names them
                said.append(msg)
                continue
            field = ".".join(map(str, err["loc"]))
            if flags:  # named as the command's option
                field = "--" + str(err["loc"][0]).replace("_", "-")
            got = err.get("input")
            given = "" if isinstance(got, dict) else f" (you gave {quote(got)})"
            said.append(f"{field}: {msg}{given}")
        return "invalid settings: " + "; ".join(said)
    return None


@contextlib.contextmanager
def interruptible_start_up() -> Iterator[None]:
    """Ctrl-C and SIGTERM (the dashboard's stop) during a campaign command's start-up: they
    are deferred to checkpoints where nothing is half done (store/interrupts.py: raised
    inside an import or a DuckDB query they were tracebacks); one before the campaign's row
    says so in one line and exits 130."""
    # First: a Ctrl-C in the seconds of imports before was lost.
    interrupts.stop_raises()
    try:
        with interrupts.start_up_deferred(lambda m: err.print(m, markup=False)):
            yield
    except KeyboardInterrupt:
        err.print("interrupted before the search began", markup=False)
        raise typer.Exit(130) from None


def start_up_interruptible(command):
    """`command`, stopped cleanly by a Ctrl-C in its start-up (interruptible_start_up)."""

    @functools.wraps(command)
    def wrapped(*args, **kwargs):
        with interruptible_start_up():
            return command(*args, **kwargs)

    return wrapped


def typer_signature(wrapper: Callable[..., Any], params: list[inspect.Parameter]) -> None:
    """Make typer read `params` as `wrapper`'s options (a command whose options are built,
    not written): typer reads the signature and the annotations, never the wrapped
    function's own."""
    wrapper.__dict__.pop("__wrapped__", None)
    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}


def received(e: Exception, argv: list[str]) -> str | None:
    """The value a bad option was given on the command line (click's message names the
    option and the rule, not what was typed)."""
    # By name: typer may carry its own copy of click, whose classes are not click's.
    kinds = {k.__name__ for k in type(e).__mro__}
    opts = getattr(getattr(e, "param", None), "opts", None)
    if not opts or "BadParameter" not in kinds or "MissingParameter" in kinds:
        return None
    got, i = None, 0
    while i < len(argv):  # the last one given counts, as for click
        a = argv[i]
        if a in opts and i + 1 < len(argv):
            got, i = argv[i + 1], i + 2
            continue
        if a == "--":  # the end of options
            break
        got = next((a[len(o) + 1 :] for o in opts if a.startswith(o + "=")), got)
        i += 1
    return got


def escape_help(command: Any) -> None:
    """Help texts are rich markup: a default in brackets, "[mnist]", vanished as a style
    tag ("dataset name"), while "[10]" stayed."""
    for p in command.params:
        if getattr(p, "help", None):
            p.help = escape(p.help)
    for sub in getattr(command, "commands", {}).values():
        escape_help(sub)


def _num(v: Any, spec: str) -> str:
    return "n/a" if v is None else format(v, spec)


def search_length(s: dict[str, Any]) -> str:
    """How long a campaign's seeds searched, in its strategy's words (`s`: a
    store.campaigns summary): the ICST's iteration means, or, for a strategy that searches
    its whole budget past the first failure (NSGA-II), its generations and evaluations
    and the generation a failure was first found in ("mean iterations 2.0" after 10
    generations read as a search that stopped at 2)."""
    # Deferred (start-up time: loads duckdb, pandas, pyarrow).
    from store import campaigns as sc

    fail = _num(s.get("iterations_to_failure"), ".1f")
    if not s.get("whole_budget"):
        icst = _num(s.get("iterations_icst"), ".1f")
        return f"{sc.ICST_ITERATIONS} {icst}, {sc.FAILURE_ITERATIONS} {fail}"
    return (
        f"generations {_num(s.get('generations'), 'd')}, "
        f"evaluations per viable seed {_num(s.get('evaluations_per_seed'), ',.0f')} (mean), "
        + (
            "no failure found"
            if s.get("iterations_to_failure") is None
            else f"first failure found in generation {fail} (mean over failing seeds)"
        )
    )


def status_line(s: dict[str, Any]) -> str:
    """GIFTbench's status bar, with the counters named for what they count."""
    # Deferred (start-up time: loads duckdb, pandas, pyarrow).
    from store import campaigns as sc

    pct = "n/a" if s.get("misclassified_pct") is None else f"{s['misclassified_pct']:.1f}%"
    return (
        f"viable seeds {s['viable']} of {s['seeds_total']}, "
        f"{failed_as(s.get('criterion'))} {s['misclassified']} "
        f"({pct} of viable), {search_length(s)}"
        + (f"; {sc.unfinished_note(s)}" if s.get("interrupted") else "")
        # A failed campaign's seeds are stopped too, and resume refuses it.
        + (
            f" (`latentfuzz resume {s['campaign_id']}` finishes them)"
            if s.get("interrupted") and s.get("status") in RESUMABLE
            else ""
        )
    )


def stopped_in_close(home: Path) -> None:
    """After a KeyboardInterrupt out of a campaign's close: say what became of it in one
    line and exit 130; return if it came from elsewhere (the start-up)."""
    # Deferred (start-up time: loads duckdb, pyarrow, numpy).
    from store import interrupts, recovery

    if recovery.pending(home):  # a Ctrl-C while the last rows waited for the store
        err.print(
            "interrupted while waiting for the store; the campaign's last rows are in "
            "a recovery file that the next command writes",
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(130) from None
    if (cid := interrupts.forced()) is not None:
        err.print(
            f"stopped while campaign {cid} was closing; it is listed as crashed, and "
            f"`latentfuzz resume {cid}` completes it",
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(130) from None
