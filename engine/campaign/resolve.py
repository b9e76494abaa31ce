"""``resolve`` turns a campaign config into loaded, mutually compatible parts (dataset,
generator, classifier, strategy, fitness) or raises ConfigError saying what was received,
what was expected and how to fix it; the checks of each part live in
engine/campaign/parts.py."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from engine.campaign import parts
from engine.campaign.config import CampaignConfig, format_validation, objectives
from engine.classifiers import Classifier
from engine.core.errors import ConfigError
from engine.core.untrusted import quote
from engine.datasets import Dataset, dataset_names
from engine.generators import GENERATORS, Generator
from engine.search.fitness import Criterion, Fitness
from engine.search.strategies import STRATEGIES, SearchSpace, Strategy
from engine.validators import default_validators

#: Most values a search may hold at once (seeds x population x latent size; interpolate's
#: encoded images), 1 GiB as float32, which the search copies as it works: `--seeds 1000
#: --population 10000` drew 15 GB in one call before the first generation, on a machine
#: with less, and left a `failed` campaign with a traceback.
MAX_SEARCH_VALUES = 2**28


@dataclass
class Resolved:
    config: CampaignConfig
    dataset: Dataset
    generator: Generator
    generator_name: str
    classifier: Classifier
    classifier_name: str
    strategy: Strategy
    fitness: Fitness
    criterion: Criterion
    model_hashes: dict[str, str]
    #: The second classifier of a differential campaign, else None.
    classifier_b: Classifier | None = None
    classifier_b_name: str | None = None

    @property
    def validators(self) -> dict[str, float | None]:
        """The validity filters run when the campaign ends, with their thresholds."""
        if self.config.validators is not None:
            return dict(self.config.validators)
        if self.classifier_b is None:
            return {}
        return default_validators(self.generator)

    @property
    def archive(self) -> bool:
        """Whether every distinct failing input is kept (engine/search/archive.py)."""
        on = self.config.archive
        return self.classifier_b is not None if on is None else on


def resolve(cfg: CampaignConfig, models_root: Path | None = None) -> Resolved:
    """Load and cross-check every part. Raises ConfigError; writes nothing."""
    if cfg.dataset not in dataset_names():
        raise ConfigError(
            f"dataset {cfg.dataset!r} unknown; expected one of {dataset_names()} (add a "
            f"folder of your images with `latentfuzz data add {cfg.dataset} DIR`)"
        )
    if cfg.strategy not in STRATEGIES:
        raise ConfigError(
            f"strategy {cfg.strategy!r} unknown; expected one of {STRATEGIES.names()}"
        )
    fitness_cls, criterion_cls = objectives(cfg)
    ds = parts.dataset(cfg)
    cfg = parts.escape_seeds(cfg, ds.num_classes)
    cfg, own = own_generator(cfg, ds)
    models = parts.load_models(cfg, ds, models_root, own)
    gen = models.generator
    try:
        gen.configure(**cfg.generator_params)
    except ValidationError as e:
        raise ConfigError(format_validation(e, where="generator_params")) from None
    parts.check_generator(cfg, ds, gen, models.generator_name)
    parts.check_seed_pool(cfg, ds, gen)
    resolved = Resolved(
        config=cfg,
        dataset=ds,
        generator=gen,
        generator_name=models.generator_name,
        classifier=models.classifier,
        classifier_name=models.classifier_name,
        strategy=make_strategy(cfg, gen, models.generator_name, ds),
        fitness=fitness_cls(),
        criterion=criterion_cls(),
        model_hashes=parts.model_hashes(models, models_root),
        classifier_b=models.classifier_b,
        classifier_b_name=models.classifier_b_name,
    )
    why = type(resolved.strategy).check_parts(resolved)
    if why is not None:
        raise ConfigError(why)
    return resolved


def own_generator(cfg: CampaignConfig, ds: Dataset) -> tuple[CampaignConfig, Generator | None]:
    """The config with the generator its strategy always searches (``generator_family``:
    pixel space for the baselines), and that generator built for the dataset; unchanged
    and None for a strategy that searches the campaign's generator. ConfigError (one line)
    when the config names another generator than the strategy's own, or a strategy's own
    generator for a strategy that does not search it."""
    family = STRATEGIES.get(cfg.strategy).generator_family
    if family is None:
        owners = [
            n for n in STRATEGIES.names() if STRATEGIES.get(n).generator_family == cfg.generator
        ]
        if owners:
            raise ConfigError(
                f"generator {quote(cfg.generator)} is searched only by strategies "
                f"{', '.join(owners)}, got strategy {quote(cfg.strategy)}; pick one of them "
                "(--strategy), or a zoo generator (--generator)"
            )
        return cfg, None
    if "generator" in cfg.model_fields_set and cfg.generator != family:
        raise ConfigError(
            f"strategy {quote(cfg.strategy)} searches {family} space, but generator "
            f"{quote(cfg.generator)} was given; drop generator (--generator), or give "
            f"generator {family}"
        )
    return cfg.model_copy(update={"generator": family}), GENERATORS.get(family)(
        ds.shape, ds.num_classes
    )


def make_strategy(cfg: CampaignConfig, gen: Generator, gen_name: str, ds: Dataset) -> Strategy:
    """The config's strategy with its parameters, over the generator's latent space."""
    strategy_cls = STRATEGIES.get(cfg.strategy)
    try:
        params = strategy_cls.parse_params(cfg.strategy_params)
    except ValidationError as e:
        known = list(strategy_cls.Params.model_fields)
        raise ConfigError(
            format_validation(e, where="strategy_params", known=known)
            + f" (strategy {cfg.strategy!r})"
        ) from None
    low, high = gen.latent_bounds
    if not high - low < float("inf"):
        raise ConfigError(
            f"generator {gen_name} has no measured latent bounds in its card; "
            f"run `latentfuzz models measure {gen_name}`"
        )
    space = SearchSpace(gen.latent_shape, float(low), float(high), ds.num_classes)
    why = strategy_cls.check_generator(gen)
    if why is not None:
        raise ConfigError(why)
    strategy = strategy_cls(params, space)
    check_search_size(cfg.seeds, *strategy.held_per_seed(math.prod(ds.shape)))
    return strategy


def check_search_size(seeds: int, vectors: int, values: int) -> None:
    """ConfigError (one line) when the search would hold more than MAX_SEARCH_VALUES
    values at once (`vectors` of `values` for each seed): checked before the store is
    touched, as a population is drawn whole."""
    n = seeds * vectors * values
    if n > MAX_SEARCH_VALUES:
        raise ConfigError(
            f"{seeds:,} seeds x {vectors:,} latents each x {values:,} values is {n:,} values "
            f"({n * 4 / 2**30:,.1f} GiB) held at once, expected at most {MAX_SEARCH_VALUES:,} "
            "(1 GiB, copied as the search works); lower --seeds or --population "
            "(interpolate: k), or split the seeds over several campaigns"
        )
