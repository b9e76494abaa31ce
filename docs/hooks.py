"""MkDocs hook (`hooks:` in mkdocs.yml): the reference pages' tables, generated from the code
at every build so that they cannot go stale.

A page asks for a table with a marker line, e.g. ``<!-- generated: cli -->``; the marker is
replaced by the table's Markdown before the page is rendered. An unknown marker fails the
build.
"""

from __future__ import annotations

import html
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# The checkout's own code, whatever an installed copy of the package says (worktrees).
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)
PROG = "latentfuzz"


def cli_root() -> Any:
    """The click command behind the `latentfuzz` typer app: the one place the docs import
    the CLI."""
    import typer

    from engine.cli.main import app

    return typer.main.get_command(app)


def visible_commands(root: Any | None = None) -> Iterator[tuple[tuple[str, ...], Any, Any]]:
    """Every command and group that ``--help`` shows, depth first, names sorted.

    Yields:
        (path of names below `latentfuzz`, click command, its click context).
    """
    root = cli_root() if root is None else root
    ctx = root.context_class(root, info_name=PROG)

    def walk(group: Any, gctx: Any, path: tuple[str, ...]):
        for name in sorted(getattr(group, "commands", {})):
            sub = group.commands[name]
            if sub.hidden:
                continue
            sctx = sub.context_class(sub, info_name=name, parent=gctx)
            yield (*path, name), sub, sctx
            yield from walk(sub, sctx, (*path, name))

    yield from walk(root, ctx, ())


def _text(s: str | None) -> str:
    """Help text as Markdown: code spans kept, everything else taken literally."""
    parts = (s or "").split("`")
    for i in range(0, len(parts), 2):  # even parts lie outside code spans
        parts[i] = html.escape(parts[i], quote=False).replace("*", r"\*")
    return "`".join(parts)


def _cell(s: str) -> str:
    return _text(" ".join(s.split())).replace("|", r"\|")


def _param_row(param: Any, ctx: Any) -> str | None:
    """One table row of an argument or option, or None for a hidden one."""
    record = param.get_help_record(ctx)
    if record is None:
        return None
    decl, help_ = record
    name, kind = (decl.rsplit(" <", 1) + [""])[:2]
    kind = kind.rstrip(">")
    extra = ""
    if help_.endswith("]") and "  [" in help_:  # click's "[default: ...; required]" suffix
        help_, extra = help_.rsplit("  [", 1)
        extra = extra[:-1]
    what = "argument" if param.param_type_name == "argument" else "option"
    return f"| `{name}` | {what} | {_cell(kind)} | {_cell(help_)} | {_cell(extra)} |"


def _same_group(a: Any, b: Any) -> bool:
    """Two groups registered from one typer app (an alias such as `zoo` for `models`)."""
    ca = {n: getattr(c, "callback", None) for n, c in getattr(a, "commands", {}).items()}
    cb = {n: getattr(c, "callback", None) for n, c in getattr(b, "commands", {}).items()}
    return bool(ca) and ca == cb


def cli_reference() -> str:
    """Every visible command and sub-command: help, usage, arguments and options."""
    out: list[str] = []
    groups: dict[tuple[str, ...], Any] = {}
    aliases: list[tuple[str, ...]] = []
    for path, cmd, ctx in visible_commands():
        if any(path[: len(a)] == a for a in aliases):
            continue  # listed under its alias
        full = " ".join((PROG, *path))
        heading = f"{'#' * (len(path) + 1)} `{full}`"
        same = next((p for p, g in groups.items() if _same_group(g, cmd)), None)
        if same is not None:
            aliases.append(path)
            out += [heading, "", f"The same commands as `{' '.join((PROG, *same))}`:", ""]
            out += [f"- `{full} {n}`" for n in sorted(cmd.commands) if not cmd.commands[n].hidden]
            out.append("")
            continue
        out += [heading, "", _text(inspect.cleandoc(cmd.help or "")), ""]
        out += ["```text", " ".join(cmd.get_usage(ctx).split()), "```", ""]
        if getattr(cmd, "commands", None):
            groups[path] = cmd
            subs = [n for n in sorted(cmd.commands) if not cmd.commands[n].hidden]
            out += [f"Sub-commands: {', '.join(f'`{n}`' for n in subs)}.", ""]
        rows = [r for p in cmd.params if (r := _param_row(p, ctx)) is not None]
        if rows:
            out += ["| name | kind | type | description | default |", "|---|---|---|---|---|"]
            out += rows + [""]
    return "\n".join(out)


def _type_name(annotation: Any) -> str:
    """A type as a reader writes it: `float | None`, `'initial' | 'step'`, `dict[str, Any]`."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is type(None):
        return "None"
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is not None:
        return f"{origin.__name__}[{', '.join(_type_name(a) for a in args)}]"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _value(v: Any) -> str:
    """A default as YAML writes it."""
    if v is None:
        return "`null`"
    if isinstance(v, bool):
        return f"`{str(v).lower()}`"
    return f"`{v}`"


_BOUNDS = {
    "ge": ">=",
    "gt": ">",
    "le": "<=",
    "lt": "<",
    "multiple_of": "multiple of",
    "min_length": "length >=",
    "max_length": "length <=",
}


def model_table(model: Any, prefix: str = "") -> str:
    """A pydantic model's fields: key, type, default, bounds and description."""
    from pydantic_core import PydanticUndefined

    rows = ["| key | type | default | bounds | description |", "|---|---|---|---|---|"]
    for name, field in model.model_fields.items():
        if field.default_factory is not None:
            default = _value(field.default_factory())
        elif field.default is PydanticUndefined:
            default = "required"
        else:
            default = _value(field.default)
        bounds = [
            f"{word} {getattr(m, key)}"
            for m in field.metadata
            for key, word in _BOUNDS.items()
            if getattr(m, key, None) is not None
        ]
        rows.append(
            f"| `{prefix}{name}` | `{_type_name(field.annotation)}` | {default} | "
            f"{_cell(', '.join(bounds))} | {_cell(field.description or field.title or '')} |"
        )
    return "\n".join(rows)


def _first_line(obj: Any) -> str:
    """The first paragraph of a class's own docstring, else of its module's."""
    doc = obj.__dict__.get("__doc__") or sys.modules[obj.__module__].__doc__ or ""
    return _cell(inspect.cleandoc(doc).split("\n\n")[0])


def config_reference() -> str:
    """The campaign config, every registered strategy's parameters, objectives and criteria,
    validity filters and every generator family's options."""
    from engine.campaign.config import CampaignConfig
    from engine.generators import GENERATORS
    from engine.search.fitness import CRITERIA, FITNESS
    from engine.search.strategies import STRATEGIES
    from engine.validators import VALIDATORS

    out = [
        "## Campaign config",
        "",
        "`engine/campaign/config.py: CampaignConfig`: the keys of a "
        "`latentfuzz run --config` YAML file (flags override them).",
        "",
        model_table(CampaignConfig),
        "",
    ]
    out += ["## Strategies (`strategy`, `strategy_params`)", ""]
    for name in STRATEGIES.names():
        cls = STRATEGIES.get(name)
        out += [
            f"### `{name}`",
            "",
            _first_line(cls),
            "",
            f"Default objective: `{cls.default_fitness}`. Parameters, under `strategy_params`:",
            "",
            model_table(cls.Params),
            "",
        ]
    out += [
        "## Objectives (`fitness`) and failure criteria (`criterion`)",
        "",
        "| kind | name | what it is |",
        "|---|---|---|",
    ]
    out += [f"| fitness | `{n}` | {_first_line(FITNESS.get(n))} |" for n in FITNESS.names()]
    out += [f"| criterion | `{n}` | {_first_line(CRITERIA.get(n))} |" for n in CRITERIA.names()]
    out += ["", "## Validity filters (`validators`)", "", "| name | what it scores |", "|---|---|"]
    out += [f"| `{n}` | {_first_line(VALIDATORS.get(n))} |" for n in VALIDATORS.names()]
    out += ["", "## Generator options (`generator_params`)", ""]
    plain = []
    for name in GENERATORS.names():
        options = GENERATORS.get(name).Options
        if not options.model_fields:
            plain.append(f"`{name}`")
            continue
        out += [f"### `{name}`", "", model_table(options), ""]
    out += [f"Families without options: {', '.join(plain)}.", ""]
    return "\n".join(out)


_COLUMN = re.compile(r"^\s*(\w+)\s+[A-Z][^-]*?(?:--\s*(.*))?$")


def _column_notes(ddl: str) -> dict[str, str]:
    """Each column's SQL comment in the DDL: on its line, or on comment lines just above."""
    notes: dict[str, str] = {}
    above: list[str] = []
    for line in ddl.splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("--"):
            above.append(stripped[2:].strip())
            continue
        m = _COLUMN.match(line)
        if m and m.group(1).upper() not in ("PRIMARY", "CREATE"):
            notes[m.group(1)] = " ".join([*above, m.group(2) or ""]).strip()
        above = []
    return notes


def store_reference() -> str:
    """`store/schema.py`'s tables and columns (as DuckDB builds them), and the version."""
    import duckdb

    from store import schema

    con = duckdb.connect(":memory:")
    for ddl in schema.DDL:
        con.execute(ddl)
    out = [
        f"Schema version **{schema.SCHEMA_VERSION}** (`store/schema.py: SCHEMA_VERSION`; "
        "older stores are migrated on open, a newer one is refused).",
        "",
    ]
    for ddl in schema.DDL:
        table = re.search(r"CREATE TABLE IF NOT EXISTS (\w+)", ddl).group(1)
        notes = _column_notes(ddl)
        keys = con.execute(
            "SELECT constraint_column_names FROM duckdb_constraints() "
            "WHERE table_name = ? AND constraint_type = 'PRIMARY KEY'",
            [table],
        ).fetchall()
        key = ", ".join(keys[0][0]) if keys else schema.KEYS.get(table, "")
        kept = " (kept by the writer, no index)" if table in schema.UNINDEXED else ""
        out += [
            f"### `{table}`",
            "",
            f"Key: `({key})`{kept}." if key else "No key.",
            "",
            "| column | type | null | notes |",
            "|---|---|---|---|",
        ]
        for col, dtype, nullable in con.execute(
            "SELECT column_name, data_type, is_nullable FROM duckdb_columns() "
            "WHERE table_name = ? ORDER BY column_index",
            [table],
        ).fetchall():
            out.append(
                f"| `{col}` | `{dtype}` | {'yes' if nullable else 'no'} | "
                f"{_cell(notes.get(col, ''))} |"
            )
        out.append("")
    con.close()
    return "\n".join(out)


def store_contract() -> str:
    """`store/CONTRACT.md`, its headings moved two levels down to sit inside a page."""
    text = (ROOT / "store" / "CONTRACT.md").read_text(encoding="utf-8")
    body = text.split("\n", 1)[1]  # its own title is the page's section heading
    return re.sub(r"^(#+) ", lambda m: "#" * (len(m.group(1)) + 1) + " ", body, flags=re.M)


SECTIONS: dict[str, Callable[[], str]] = {
    "cli": cli_reference,
    "config": config_reference,
    "store-schema": store_reference,
    "store-contract": store_contract,
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any, **_: Any) -> str:
    """Replace every ``<!-- generated: NAME -->`` line of a page with NAME's Markdown."""

    def fill(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in SECTIONS:
            raise ValueError(
                f"{page.file.src_uri}: unknown marker 'generated: {name}'; expected one of "
                f"{', '.join(SECTIONS)}"
            )
        return SECTIONS[name]()

    return MARKER.sub(fill, markdown)


# `make figures` (engine/figures/) writes each measured figure to docs/figures/NAME.md, a
# fragment stamped with its commit; a page includes it with `<!-- generated: figure-NAME -->`.
FIGURES_DIR = ROOT / "docs" / "figures"


def figure_fragment(name: str) -> Callable[[], str]:
    """The reader of fragment `name`: its text, the first line (do-not-edit) left out."""

    def read() -> str:
        return (FIGURES_DIR / f"{name}.md").read_text(encoding="utf-8").split("\n", 1)[1]

    return read


SECTIONS.update({f"figure-{p.stem}": figure_fragment(p.stem) for p in FIGURES_DIR.glob("*.md")})
