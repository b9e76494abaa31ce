"""`latentfuzz run`'s strategy flags, made from the registered strategies' pydantic
``Params`` (as the dashboard's form is): a new strategy's settings become flags without an
edit here, and a setting that no strategy has is no flag."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal

import typer
from typer.core import TyperCommand

from engine.cli.common import escape_help, interruptible_start_up, typer_signature
from engine.core.errors import LatentfuzzError
from engine.core.yaml_io import load_text
from store import interrupts

#: Click types a flag can carry; a setting of another type (a list, a mapping) is given
#: with `-p KEY=VALUE` or under strategy_params in a --config file.
_SCALARS = (bool, int, float, str)
#: Where `run --help` lists them, apart from the campaign's own options.
PANEL = "Strategy settings (each strategy's Params; or -p KEY=VALUE)"


def _scalar(annotation: Any) -> type | None:
    """The flag's type for a field annotation: int for `int | None`, str for a Literal of
    strings; None where no single scalar type fits."""
    if typing.get_origin(annotation) is Literal:
        kinds = {type(v) for v in typing.get_args(annotation)}
        return kinds.pop() if len(kinds) == 1 and kinds <= set(_SCALARS) else None
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _scalar(args[0]) if len(args) == 1 else None
    return annotation if annotation in _SCALARS else None


def _shown(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _strategies() -> dict[str, Any]:
    """name -> strategy class, for every registered strategy."""
    # Deferred: the strategies import torch and pymoo (seconds), which --help must not wait for.
    from engine.search.strategies import STRATEGIES

    return {name: STRATEGIES.get(name) for name in STRATEGIES.names()}


def settings_of(strategy: str) -> list[str] | None:
    """The setting names (and their accepted old names) of `strategy`; None for an unknown
    one (the config's check names it)."""
    if (cls := _strategies().get(strategy)) is None:
        return None
    return [*cls.Params.model_fields, *cls.Params.renamed]


def has_presets(strategy: str) -> bool:
    """Whether `strategy` has step presets (so a step given alone means a custom one)."""
    cls = _strategies().get(strategy)
    return cls is not None and cls.has_presets


def strategy_options(taken: set[str]) -> dict[str, tuple[type, Any]]:
    """name -> (annotation, typer default) of one flag per scalar strategy setting, over all
    registered strategies, leaving out names in `taken` (the run command's own flags).

    A setting's help is its description and its default per strategy ("[ga 250, nsga2
    30]"). A setting's old names (``Params.renamed``) become hidden flags, so a renamed
    setting's old flag keeps working."""
    found: dict[str, dict[str, Any]] = {}
    for sname, cls in _strategies().items():
        params = cls.Params
        for name, field in params.model_fields.items():
            kind = _scalar(field.annotation)
            if kind is None or name in taken:
                continue
            f = found.setdefault(
                name,
                {"kind": kind, "help": field.description or name, "defaults": {}, "aliases": set()},
            )
            f["defaults"][sname] = field.default
            f["aliases"] |= {old for old, new in params.renamed.items() if new == name}
    out: dict[str, tuple[type, Any]] = {}
    for name, f in found.items():
        values = set(map(_shown, f["defaults"].values()))
        default = (
            values.pop()
            if len(values) == 1
            else ", ".join(f"{s} {_shown(v)}" for s, v in f["defaults"].items())
        )
        strategies = ", ".join(f["defaults"])
        help_ = f"{f['help']} ({strategies}) [{default}]"
        flag = "--" + name.replace("_", "-")
        decls = [f"{flag}/--no-{name.replace('_', '-')}"] if f["kind"] is bool else [flag]
        option = typer.Option(*decls, help=help_, rich_help_panel=PANEL)
        out[name] = (Annotated[f["kind"] | None, option], None)
        for alias in sorted(f["aliases"] - taken - set(found)):
            hidden = typer.Option("--" + alias.replace("_", "-"), hidden=True, help=help_)
            out[alias] = (Annotated[f["kind"] | None, hidden], None)
    return out


def parse_params(items: list[str] | None) -> dict[str, Any]:
    """['generations=3', 'embedding=umap'] -> {'generations': 3, 'embedding': 'umap'}; each
    value read as a YAML scalar, as in a --config file."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise LatentfuzzError(
                f"-p {item!r}: expected KEY=VALUE, e.g. -p generations=100 (a strategy setting)"
            )
        if key.strip() in out:
            raise LatentfuzzError(f"-p {key.strip()} is given twice; give each setting once")
        out[key.strip()] = load_text(value, f"-p {key.strip()}")
    return out


def merge_settings(flags: dict[str, Any], pairs: dict[str, Any]) -> dict[str, Any]:
    """The settings given as flags and as -p KEY=VALUE, one mapping; a setting given both
    ways is refused rather than one silently winning."""
    if both := [k for k in flags if k in pairs]:
        k = both[0]
        raise LatentfuzzError(
            f"--{k.replace('_', '-')} {flags[k]} and -p {k}={pairs[k]} name one setting; "
            "give it once"
        )
    return {**pairs, **flags}


def check_flags(strategy: str, flagged: dict[str, Any], pairs: tuple[str, ...] = ()) -> None:
    """A strategy setting that the chosen strategy has no setting for, named as it was
    given ("--generations: strategy 'interpolate' has no such setting"; "-p nope: ..." for
    one of `pairs`, the keys given with -p)."""
    known = settings_of(strategy)
    if known is not None and (extra := [k for k in flagged if k not in known]):
        given = ", ".join(f"-p {k}" if k in pairs else "--" + k.replace("_", "-") for k in extra)
        # Old names are accepted but not offered.
        current = list(_strategies()[strategy].Params.model_fields)
        raise LatentfuzzError(
            f"{given}: strategy {strategy!r} has no such setting; its settings are "
            f"{', '.join(current)} (as flags, -p KEY=VALUE, or strategy_params in a --config "
            "file)"
        )


def with_strategy_flags(command: Callable[..., Any], flags: bool = True) -> Callable[..., Any]:
    """`command(**fixed, strategy_params=...)` as a typer callback: its own options, plus
    (with `flags`) one per strategy setting, which reach it as one mapping."""
    sig = inspect.signature(command, eval_str=True)
    fixed = [p for p in sig.parameters.values() if p.name != "strategy_params"]
    extra = strategy_options({p.name for p in fixed}) if flags else {}

    def wrapped(**kwargs: Any) -> Any:
        settings = {k: kwargs.pop(k) for k in extra if k in kwargs}
        return command(**kwargs, strategy_params=settings)

    params = fixed + [
        inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=a, default=d)
        for n, (a, d) in extra.items()
    ]
    wrapped.__name__, wrapped.__doc__ = command.__name__, command.__doc__
    typer_signature(wrapped, params)
    return wrapped


def lazy_flags(command: Callable[..., Any]) -> type[TyperCommand]:
    """A command class whose strategy flags are made on first use (parsing its arguments
    or printing its help): the strategies import torch and pymoo (seconds), which
    `latentfuzz --help` and every other command must not wait for."""

    class StrategyFlagsCommand(TyperCommand):
        _loaded = False

        def _load(self) -> None:
            if self._loaded:
                return
            # The strategies' imports take seconds: a Ctrl-C in them is the command's
            # start-up's, one line and exit 130, not a traceback in an import.
            with interruptible_start_up():
                one = typer.Typer(add_completion=False)
                one.command(self.name)(with_strategy_flags(command))
                full = typer.main.get_command(one)
                interrupts.checkpoint()
            escape_help(full)
            self.params, self.callback = full.params, full.callback
            self._loaded = True

        def get_params(self, ctx: Any) -> list[Any]:
            self._load()
            return super().get_params(ctx)

    return StrategyFlagsCommand
