"""A grid of campaigns: a base config and axes, expanded into cells in a stable order.

The grid YAML::

    name: icst-mnist                  # the grid's group (campaigns' study); default: file stem
    base: {dataset: mnist, seeds: 100, seed: 1, strategy_params: {generations: 250}}
    axes:                             # any config field; dotted paths reach into mappings
      generator: [vae, gan, dm]
      strategy_params.perturbation: [low, high]
    resources: {gpu: 0}               # per cell, for Ray (num_gpus); optional

Cells are the product of the axes, the first axis outermost. A cell's id is derived from
its values alone (a hash of their JSON), so re-reading the same grid, or the grid with an
axis value added, gives the finished cells the same ids: that is what resume relies on.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.campaign.config import CampaignConfig, load_yaml, parse_config
from engine.core.errors import ConfigError
from engine.core.ids import ID_PATTERN
from engine.core.untrusted import quote
from engine.search.strategies import STRATEGIES

KEYS = ("name", "base", "axes", "resources")
RESOURCES = ("gpu", "cpu")
MAX_NAME = 60  # a cell's campaign id is "<name>-<cell id>", at most 100 characters
#: Most cells a grid may expand to: each is a campaign, and nine axes of ten values in a
#: 300-byte YAML asked for a billion, expanded in memory before the first one ran.
MAX_CELLS = 10_000


@dataclass(frozen=True)
class Cell:
    id: str  # stable, from the values
    values: dict[str, Any]  # axis -> value, in the grid's axis order
    raw: dict[str, Any]  # the campaign config: base with the values set

    def campaign_id(self, grid: str) -> str:
        return f"{grid}-{self.id}"

    def label(self) -> str:
        return " ".join(f"{k}={_short(v)}" for k, v in self.values.items())

    def differs_from(self, stored: dict[str, Any]) -> list[str]:
        """'key: stored -> now' for each setting of this cell's config that differs from
        the stored campaign's (its config as recorded, defaults filled). Settings the run
        resolves (None here: the fitness, the batch size) and run-time knobs are left out,
        so a default written out, or a device changed, is no change."""
        cfg = parse_config(self.raw)
        now = cfg.model_dump(exclude={"generator_params", "strategy_params", *RUN_TIME})
        now["generator_params"] = cfg.generator_params  # the card's defaults fill the rest

        if cfg.strategy in STRATEGIES:
            try:
                now["strategy_params"] = (
                    STRATEGIES.get(cfg.strategy).Params(**cfg.strategy_params).model_dump()
                )
            except ValueError:  # the run refuses it, with its own message
                now["strategy_params"] = cfg.strategy_params
        was = _flat(stored)
        return [
            f"{k}: {was[k]} -> {v}"
            for k, v in _flat(now).items()
            if v is not None and k in was and was[k] != v
        ]


@dataclass
class GridSpec:
    name: str
    base: dict[str, Any]
    axes: dict[str, list[Any]]
    resources: dict[str, float] = field(default_factory=dict)
    #: Programmatic grids only: settings that follow from a cell's values (a strategy's
    #: parameters at an equal budget), applied to each cell's config after its values.
    derive: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        # Counted before a cell is built: `cells()` expands them all, checking each config.
        if (n := math.prod(len(v) for v in self.axes.values())) > MAX_CELLS:
            sizes = " x ".join(f"{len(v):,}" for v in self.axes.values())
            raise ConfigError(
                f"grid {self.name} has {n:,} cells ({sizes} values on its axes), expected at "
                f"most {MAX_CELLS:,}; each cell is a campaign: split the grid, or shorten its "
                "axes"
            )

    def cells(self) -> list[Cell]:
        """Every cell, first axis outermost; each config checked (one line per error)."""
        out, names = [], list(self.axes)
        for combo in itertools.product(*self.axes.values()):
            values = dict(zip(names, combo, strict=True))
            raw = copy.deepcopy(self.base)
            for path, v in values.items():
                _set(raw, path, v)
            if self.derive is not None:
                raw = self.derive(raw)
            cid = cell_id(values)
            raw.setdefault("name", f"{self.name} {' '.join(map(_short, combo))}"[:200])
            try:
                parse_config(raw)
            except ConfigError as e:
                raise ConfigError(f"grid {self.name}, cell {cid} ({_label(values)}): {e}") from None
            out.append(Cell(cid, values, raw))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "base": self.base,
            "axes": self.axes,
            "resources": self.resources,
        }


#: Settings that do not change a campaign's results.
RUN_TIME = (
    "name",
    "device",
    "flush_seconds",
    "batch_memory_mb",
    "batch_size",
    "record_individuals",
)


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _short(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def _label(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_short(v)}" for k, v in values.items())


def cell_id(values: dict[str, Any]) -> str:
    """Ten hex digits of the sha256 of the values' canonical JSON."""
    text = json.dumps(values, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _set(raw: dict[str, Any], path: str, value: Any) -> None:
    """Set a dotted path; a mapping value is merged into a mapping already there."""
    *parents, leaf = path.split(".")
    d = raw
    for p in parents:
        nxt = d.setdefault(p, {})
        if not isinstance(nxt, dict):
            raise ConfigError(f"axis {path}: {p} is {nxt!r} in the base, expected a mapping")
        d = nxt
    if isinstance(value, dict) and isinstance(d.get(leaf), dict):
        d[leaf] = {**d[leaf], **value}
    else:
        d[leaf] = value


def parse_grid(data: dict[str, Any], default_name: str = "grid") -> GridSpec:
    """A GridSpec from the YAML's mapping; ConfigError (one line) for anything off."""
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise ConfigError(f"grid keys {unknown} unknown; expected some of {list(KEYS)}")
    name = str(data.get("name") or default_name)
    if not ID_PATTERN.fullmatch(name) or len(name) > MAX_NAME:
        raise ConfigError(
            f"grid name {name!r} is not allowed; expected 1-{MAX_NAME} letters, digits, '.', "
            "'_' or '-', starting with a letter or digit"
        )
    base = data.get("base") or {}
    axes = data.get("axes") or {}
    if not isinstance(base, dict):
        raise ConfigError(f"grid base is {quote(base)}, expected a mapping of config settings")
    if not isinstance(axes, dict) or not axes:
        raise ConfigError(
            f"grid axes are {quote(axes)}, expected a mapping of config field -> list of values, "
            "e.g. axes: {generator: [vae, gan]}"
        )
    fields = list(CampaignConfig.model_fields)
    for path, values in axes.items():
        if str(path).split(".")[0] not in fields:
            raise ConfigError(f"axis {quote(path)} is not a config field; expected one of {fields}")
        if not isinstance(values, list) or not values:
            raise ConfigError(
                f"axis {quote(path)} is {quote(values)}, expected a non-empty list of values"
            )
        ids = [cell_id({path: v}) for v in values]
        if len(set(ids)) != len(ids):
            raise ConfigError(f"axis {quote(path)} lists a value twice: {quote(values)}")
    resources = data.get("resources") or {}
    if not isinstance(resources, dict) or set(resources) - set(RESOURCES):
        raise ConfigError(f"grid resources {resources!r}; expected a mapping of {RESOURCES}")
    for k, v in resources.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:  # gpu: true read as 1
            raise ConfigError(f"grid resources.{k} is {v!r}, expected a number >= 0")
    return GridSpec(name, base, {str(k): v for k, v in axes.items()}, dict(resources))


def load_grid(path: str | Path) -> GridSpec:
    return parse_grid(load_yaml(path), Path(path).stem)
