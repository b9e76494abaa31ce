"""Campaign configuration: a frozen, serialisable model, validated before anything is
written, and the objectives (fitness, criterion) it asks for; engine/campaign/resolve.py
turns it into loaded parts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from pydantic import Field, ValidationError, field_validator

from engine.core.errors import ConfigError
from engine.core.settings import Settings
from engine.core.untrusted import quote
from engine.core.yaml_io import read_mapping
from engine.datasets import DatasetError, get_dataset
from engine.search.fitness import CRITERIA, FITNESS, Criterion, Fitness
from engine.search.strategies import STRATEGIES

#: Longest name, and longest path, a config may give: a config is shared, and a 100 MB
#: name was read, validated and echoed whole.
NAME_LIMIT = 200
PATH_LIMIT = 4096


class CampaignConfig(Settings):
    """Everything that defines a campaign. Same config and seed, same stored results."""

    name: str | None = Field(None, max_length=NAME_LIMIT)
    dataset: str = Field("mnist", max_length=NAME_LIMIT)
    data_dir: str | None = Field(None, max_length=PATH_LIMIT)
    generator: str = Field(
        "vae", max_length=PATH_LIMIT, description="zoo name or family, e.g. 'vae' -> mnist-vae"
    )
    generator_params: dict[str, Any] = Field(
        default_factory=dict, description="generator options, e.g. {steps: 8} for a dm"
    )
    classifier: str | None = Field(
        None, max_length=PATH_LIMIT, description="zoo name, or a TorchScript file path"
    )
    classifier_b: str | None = Field(
        None,
        max_length=PATH_LIMIT,
        description="a second classifier under test (differential testing): zoo name "
        "or TorchScript file; every image is classified by both",
    )
    archive: bool | None = Field(
        None,
        description="keep every distinct failing input the search evaluates, not only "
        "each seed's result; default: on for differential campaigns (classifier_b)",
    )
    validators: dict[str, float | None] | None = Field(
        None,
        description="validity filters scored on archived and result images when the "
        "campaign ends, each with its threshold (null: the filter's default), e.g. "
        "{ssim-nearest: 0.4}; default: every applicable one for differential campaigns",
    )
    strategy: str = Field("ga", max_length=NAME_LIMIT)
    strategy_params: dict[str, Any] = Field(default_factory=dict)
    fitness: str | None = Field(
        None,
        max_length=NAME_LIMIT,
        description="objective (margin, targeted, boundary); default: the strategy's",
    )
    criterion: str | None = Field(
        None,
        max_length=NAME_LIMIT,
        description="failure criterion; default: the one that goes with the fitness",
    )
    target: int | None = Field(
        None, ge=0, description="class a targeted search must reach (fitness 'targeted')"
    )
    seeds: int = Field(10, ge=1, le=100_000)
    target_class: int | None = Field(None, ge=0)
    escape_per_pair: int | None = Field(
        None,
        ge=1,
        le=1000,
        description="class-escape matrix: this many targeted searches for every (source, "
        "target) class pair; the seed count follows from it",
    )
    seed: int = Field(0, ge=0, lt=2**63)
    batch_size: int | None = Field(
        None,
        ge=1,
        le=1 << 20,
        description="max images per decode call; unset: the fastest size on this machine, "
        "measured at start-up and cached (engine/campaign/batching.py)",
    )
    batch_memory_mb: int = Field(
        1024, ge=16, le=1 << 20, description="memory cap of one batch when the size is measured"
    )
    device: str = Field("cpu", max_length=NAME_LIMIT)
    record_individuals: bool = True
    flush_seconds: float = Field(
        2.0, gt=0, le=600, description="how often the store is written (live view latency)"
    )

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        """A device torch knows ('cpu', 'cuda', 'cuda:1', 'mps'), checked before any model
        is loaded."""

        try:
            torch.device(v)
        except (RuntimeError, ValueError):
            raise ValueError(
                f"device {quote(v)} is not a torch device; expected cpu, cuda, cuda:N or mps"
            ) from None
        return v


def format_validation(
    e: ValidationError, where: str = "config", known: list[str] | None = None
) -> str:
    """One line per error; `known`: the settings the model has, named when one is not."""
    lines = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err["loc"]) or where
        got = err.get("input")
        got_txt = "" if isinstance(got, dict) else f" (got {quote(got)})"
        if err["type"] == "extra_forbidden" and known is not None:
            lines.append(f"{where}.{loc}: not a setting here{got_txt}; expected one of {known}")
            continue
        # A model's own check raises ValueError("..."), which pydantic prefixes.
        msg = err["msg"].removeprefix("Value error, ")
        number = isinstance(got, int | float) and not isinstance(got, bool)
        if err["type"] == "string_type" and number:  # `name: 123`
            msg += "; in a YAML file, put a name that is a number in quotes"
        lines.append(f"{where}.{loc}: {msg}{got_txt}" if err["loc"] else f"{where}: {msg}")
    return "; ".join(lines)


def parse_config(raw: dict[str, Any]) -> CampaignConfig:
    try:
        return CampaignConfig(**raw)
    except ValidationError as e:
        raise ConfigError(format_validation(e, known=list(CampaignConfig.model_fields))) from None


#: Keys a campaign's stored config carries for readers but that are derived, not set.
RECORD_ONLY = ("evaluation_budget", "budget_rule")


def from_record(raw: dict[str, Any]) -> CampaignConfig:
    """The config of a stored campaign (its `config` column), derived keys left out, and
    settings that older versions stored but never used (a target under a margin search, a
    data_dir for the embedded MNIST; refused for new campaigns) dropped, so that such a
    campaign still resumes and validates as it ran."""
    kept = {k: v for k, v in raw.items() if k not in RECORD_ONLY}
    f, c = raw.get("fitness"), raw.get("criterion")
    known = f in FITNESS.names() and c in CRITERIA.names()
    reads = (*FITNESS.get(f).requires, *CRITERIA.get(c).requires) if known else ("target",)
    if kept.get("target") is not None and "target" not in reads:
        kept["target"] = None
    if kept.get("data_dir") is not None:
        try:
            if not get_dataset(kept.get("dataset") or "mnist").reads_files:
                kept["data_dir"] = None
        except DatasetError:
            pass  # resolve names the dataset
    return parse_config(kept)


def load_yaml(path: str | Path) -> dict[str, Any]:
    return read_mapping(path, "config file")


def objectives(cfg: CampaignConfig) -> tuple[type[Fitness], type[Criterion]]:
    """The fitness and criterion classes in force (defaults filled in), cross-checked with
    the config: an objective that reads the target class needs ``target``."""
    if cfg.strategy not in STRATEGIES:
        raise ConfigError(
            f"strategy {quote(cfg.strategy)} unknown; expected one of {STRATEGIES.names()} "
            "(--strategy, or strategy: in the config)"
        )
    strategy_cls = STRATEGIES.get(cfg.strategy)
    escape = cfg.escape_per_pair is not None
    # Naming a second classifier makes a differential campaign: DiffGAN's objective.
    default = "divergence" if cfg.classifier_b is not None else strategy_cls.default_fitness
    fitness = cfg.fitness or ("escape" if escape else default)
    if fitness not in FITNESS:
        raise ConfigError(f"fitness {quote(fitness)} unknown; expected one of {FITNESS.names()}")
    fitness_cls = FITNESS.get(fitness)
    criterion = cfg.criterion or fitness_cls.criterion
    if criterion not in CRITERIA:
        raise ConfigError(
            f"criterion {quote(criterion)} unknown; expected one of {CRITERIA.names()}"
        )
    criterion_cls = CRITERIA.get(criterion)
    reads = (*fitness_cls.requires, *criterion_cls.requires)
    if "logits_b" in reads and cfg.classifier_b is None:
        # The strategy's own default, not a fitness the user never gave, is what to name.
        why = (
            f"fitness {quote(fitness)} with criterion {quote(criterion)} compares"
            if cfg.fitness or cfg.criterion
            else f"strategy {quote(cfg.strategy)} searches for disagreements of"
        )
        raise ConfigError(
            f"{why} two classifiers; name the second one with classifier_b (--classifier-b)"
        )
    needs_target = "target" in reads
    if escape:
        if cfg.target is not None:
            raise ConfigError(
                f"escape_per_pair={cfg.escape_per_pair} searches towards every target class, "
                f"but target={cfg.target} was given too; drop target (--target)"
            )
        if not needs_target:
            raise ConfigError(
                f"escape_per_pair needs a targeted objective, got fitness {quote(fitness)} with "
                f"criterion {quote(criterion)}; use fitness 'escape' (the default) or 'targeted'"
            )
        return fitness_cls, criterion_cls
    if cfg.target is not None and not needs_target:
        # It was stored and ignored: a margin search ran under a config that said target 3.
        raise ConfigError(
            f"target={cfg.target} is read only by a targeted objective, but fitness "
            f"{quote(fitness)} with criterion {quote(criterion)} is in force; add fitness: "
            "targeted (--fitness targeted), or drop target (--target)"
        )
    if needs_target and cfg.target is None:
        raise ConfigError(
            f"fitness {quote(fitness)} with criterion {quote(criterion)} needs a target class; "
            "give target=<class> (--target C)"
        )
    if needs_target and cfg.target == cfg.target_class:
        raise ConfigError(
            f"target={cfg.target} equals target_class (the seeds' class); a targeted "
            "search must escape to another class"
        )
    return fitness_cls, criterion_cls
