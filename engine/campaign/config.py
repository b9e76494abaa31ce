"""Campaign configuration: a frozen, serialisable model, validated before anything is written.

``resolve`` turns a config into loaded, mutually compatible parts (dataset, generator,
classifier, strategy, fitness) or raises ConfigError saying what was received, what was
expected and how to fix it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from engine.classifiers import Classifier
from engine.core.errors import ConfigError, ModelError
from engine.core.settings import Settings
from engine.core.yaml_io import read_mapping
from engine.datasets import Dataset, DatasetError, dataset_names, get_dataset
from engine.generators import Generator
from engine.models import zoo
from engine.search.fitness import CRITERIA, FITNESS, Criterion, Fitness
from engine.search.strategies import STRATEGIES, SearchSpace, Strategy


class CampaignConfig(Settings):
    """Everything that defines a campaign. Same config and seed, same stored results."""

    name: str | None = Field(None, max_length=200)
    dataset: str = "mnist"
    data_dir: str | None = None
    generator: str = Field("vae", description="zoo name or family, e.g. 'vae' -> mnist-vae")
    generator_params: dict[str, Any] = Field(
        default_factory=dict, description="generator options, e.g. {steps: 8} for a dm"
    )
    classifier: str | None = Field(None, description="zoo name, or a TorchScript file path")
    classifier_b: str | None = Field(
        None, description="a second classifier under test (differential testing): zoo name "
        "or TorchScript file; every image is classified by both",
    )  # fmt: skip
    archive: bool | None = Field(
        None, description="keep every distinct failing input the search evaluates, not only "
        "each seed's result; default: on for differential campaigns (classifier_b)",
    )  # fmt: skip
    validators: dict[str, float | None] | None = Field(
        None, description="validity filters scored on archived and result images when the "
        "campaign ends, each with its threshold (null: the filter's default), e.g. "
        "{ssim-nearest: 0.4}; default: every applicable one for differential campaigns",
    )  # fmt: skip
    strategy: str = "ga"
    strategy_params: dict[str, Any] = Field(default_factory=dict)
    fitness: str | None = Field(
        None, description="objective (margin, targeted, boundary); default: the strategy's"
    )
    criterion: str | None = Field(
        None, description="failure criterion; default: the one that goes with the fitness"
    )
    target: int | None = Field(
        None, ge=0, description="class a targeted search must reach (fitness 'targeted')"
    )
    seeds: int = Field(10, ge=1, le=100_000)
    target_class: int | None = Field(None, ge=0)
    escape_per_pair: int | None = Field(
        None, ge=1, le=1000,
        description="class-escape matrix: this many targeted searches for every (source, "
        "target) class pair; the seed count follows from it",
    )  # fmt: skip
    seed: int = Field(0, ge=0, lt=2**63)
    batch_size: int | None = Field(
        None, ge=1, le=1 << 20,
        description="max images per decode call; unset: the fastest size on this machine, "
        "measured at start-up and cached (engine/campaign/batching.py)",
    )  # fmt: skip
    batch_memory_mb: int = Field(
        1024, ge=16, le=1 << 20, description="memory cap of one batch when the size is measured"
    )
    device: str = "cpu"
    record_individuals: bool = True
    flush_seconds: float = Field(
        2.0, gt=0, le=600, description="how often the store is written (live view latency)"
    )

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        """A device torch knows ('cpu', 'cuda', 'cuda:1', 'mps'), checked before any model
        is loaded."""
        import torch

        try:
            torch.device(v)
        except (RuntimeError, ValueError):
            raise ValueError(
                f"device {v!r} is not a torch device; expected cpu, cuda, cuda:N or mps"
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
        got_txt = "" if isinstance(got, dict) else f" (got {got!r})"
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
RECORD_ONLY = ("evaluation_budget",)


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
        from engine.validators import default_validators

        return default_validators(self.generator)

    @property
    def archive(self) -> bool:
        """Whether every distinct failing input is kept (engine/search/archive.py)."""
        on = self.config.archive
        return self.classifier_b is not None if on is None else on


def objectives(cfg: CampaignConfig) -> tuple[type[Fitness], type[Criterion]]:
    """The fitness and criterion classes in force (defaults filled in), cross-checked with
    the config: an objective that reads the target class needs ``target``."""
    if cfg.strategy not in STRATEGIES:
        raise ConfigError(
            f"strategy {cfg.strategy!r} unknown; expected one of {STRATEGIES.names()} "
            "(--strategy, or strategy: in the config)"
        )
    strategy_cls = STRATEGIES.get(cfg.strategy)
    escape = cfg.escape_per_pair is not None
    # Naming a second classifier makes a differential campaign: DiffGAN's objective.
    default = "divergence" if cfg.classifier_b is not None else strategy_cls.default_fitness
    fitness = cfg.fitness or ("targeted" if escape else default)
    if fitness not in FITNESS:
        raise ConfigError(f"fitness {fitness!r} unknown; expected one of {FITNESS.names()}")
    fitness_cls = FITNESS.get(fitness)
    criterion = cfg.criterion or fitness_cls.criterion
    if criterion not in CRITERIA:
        raise ConfigError(f"criterion {criterion!r} unknown; expected one of {CRITERIA.names()}")
    criterion_cls = CRITERIA.get(criterion)
    reads = (*fitness_cls.requires, *criterion_cls.requires)
    if "logits_b" in reads and cfg.classifier_b is None:
        # The strategy's own default, not a fitness the user never gave, is what to name.
        why = (f"fitness {fitness!r} with criterion {criterion!r} compares"
               if cfg.fitness or cfg.criterion
               else f"strategy {cfg.strategy!r} searches for disagreements of")  # fmt: skip
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
                f"escape_per_pair needs a targeted objective, got fitness {fitness!r} with "
                f"criterion {criterion!r}; use fitness 'targeted' (the default)"
            )
        return fitness_cls, criterion_cls
    if cfg.target is not None and not needs_target:
        # It was stored and ignored: a margin search ran under a config that said target 3.
        raise ConfigError(
            f"target={cfg.target} is read only by a targeted objective, but fitness "
            f"{fitness!r} with criterion {criterion!r} is in force; add fitness: targeted "
            "(--fitness targeted), or drop target (--target)"
        )
    if needs_target and cfg.target is None:
        raise ConfigError(
            f"fitness {fitness!r} with criterion {criterion!r} needs a target class; "
            "give target=<class> (--target C)"
        )
    if needs_target and cfg.target == cfg.target_class:
        raise ConfigError(
            f"target={cfg.target} equals target_class (the seeds' class); a targeted "
            "search must escape to another class"
        )
    return fitness_cls, criterion_cls


def escape_seeds(cfg: CampaignConfig, num_classes: int) -> CampaignConfig:
    """An escape campaign's config with its seed count: escape_per_pair searches for every
    (source, target) pair, over all sources or just target_class."""
    if cfg.escape_per_pair is None:
        return cfg
    sources = 1 if cfg.target_class is not None else num_classes
    n = cfg.escape_per_pair * sources * (num_classes - 1)
    if "seeds" in cfg.model_fields_set and cfg.seeds != n:
        raise ConfigError(
            f"seeds={cfg.seeds}, but escape_per_pair={cfg.escape_per_pair} over {sources} "
            f"source and {num_classes - 1} target classes makes {n}; leave seeds out"
        )
    return cfg.model_copy(update={"seeds": n})


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
    try:
        ds = get_dataset(cfg.dataset, cfg.data_dir)
    except DatasetError as e:
        raise ConfigError(str(e)) from None
    if cfg.data_dir is not None and not ds.reads_files:
        # It was stored and ignored, so the config claimed data the campaign never read.
        raise ConfigError(
            f"data_dir={cfg.data_dir!r}, but dataset {cfg.dataset!r} reads no files "
            f"({ds.expected_files[0].strip('()')}); drop data_dir (--data-dir)"
        )
    for name in ("target_class", "target"):
        value = getattr(cfg, name)
        if value is not None and value >= ds.num_classes:
            raise ConfigError(
                f"{name}={value}, but {cfg.dataset} has classes 0..{ds.num_classes - 1}"
            )
    if cfg.device != "cpu":
        import torch

        if cfg.device.startswith("cuda") and not torch.cuda.is_available():
            raise ConfigError(f"device={cfg.device!r} but no CUDA device is available; use cpu")

    cfg = escape_seeds(cfg, ds.num_classes)

    gen_name = zoo.resolve("generator", cfg.dataset, cfg.generator, models_root)
    clf_name = zoo.resolve("classifier", cfg.dataset, cfg.classifier, models_root)
    clf_b_name = (
        None
        if cfg.classifier_b is None
        else zoo.resolve("classifier", cfg.dataset, cfg.classifier_b, models_root)
    )
    cards = {c["name"]: c for c in zoo.list_cards(models_root)}
    for name in (gen_name, clf_name, clf_b_name):
        if name in cards:  # model files given by path have no card to compare
            why = zoo.incompatibility(cards[name], ds)
            if why is not None:
                raise ConfigError(why)
    if clf_b_name is not None and clf_b_name == clf_name:
        raise ConfigError(
            f"classifier_b is {clf_b_name}, the same model as classifier; differential "
            "testing compares two different classifiers"
        )
    try:
        gen = zoo.load_generator(gen_name, cfg.device, models_root)
        clf = zoo.load_classifier(clf_name, cfg.dataset, cfg.device, models_root)
        clf_b = (
            None
            if clf_b_name is None
            else zoo.load_classifier(clf_b_name, cfg.dataset, cfg.device, models_root)
        )
    except ModelError as e:
        raise ConfigError(str(e)) from None
    from engine.validators import check_validators

    check_validators(cfg.validators, gen)
    if extra := sorted(set(cfg.generator_params) - set(gen.Options.model_fields)):
        # "Extra inputs are not permitted" did not say that --guidance is the DM's alone.
        takes = ", ".join(gen.Options.model_fields) or "none"
        raise ConfigError(
            f"generator {gen_name} ({gen.family}) has no option {', '.join(extra)} (its "
            f"options: {takes}); leave it out (generator_params, or its flag)"
        )
    try:
        gen.configure(**cfg.generator_params)
    except ValidationError as e:
        raise ConfigError(format_validation(e, where="generator_params")) from None
    if gen.image_shape != ds.shape:
        raise ConfigError(
            f"generator {gen_name} makes images of shape {gen.image_shape}, dataset "
            f"{cfg.dataset} has {ds.shape}; pick a generator trained on {cfg.dataset}"
        )
    if gen.conditional and gen.num_classes != ds.num_classes:
        raise ConfigError(
            f"generator {gen_name} knows {gen.num_classes} classes, "
            f"{cfg.dataset} has {ds.num_classes}"
        )

    if gen.has_encoder and not gen.conditional:
        try:
            test = ds.load("test")
        except DatasetError as e:
            raise ConfigError(str(e)) from None
        pool = (
            int((test.labels == cfg.target_class).sum())
            if cfg.target_class is not None
            else len(test)
        )
        if cfg.escape_per_pair is not None:
            import torch

            # Each source class seeds escape_per_pair images (engine/campaign/seeding.py).
            counts = torch.bincount(test.labels, minlength=ds.num_classes)
            sources = [cfg.target_class] if cfg.target_class is not None else range(len(counts))
            short = [c for c in sources if counts[c] < cfg.escape_per_pair]
            if short:
                c = short[0]
                raise ConfigError(
                    f"escape_per_pair={cfg.escape_per_pair} but {cfg.dataset} has only "
                    f"{int(counts[c])} test images of class {c}; ask for at most "
                    f"{int(counts[list(sources)].min())}"
                )
        elif cfg.seeds > pool:
            raise ConfigError(
                f"{cfg.seeds:,} seeds asked for, but {cfg.dataset} has only {pool:,} test "
                f"images{'' if cfg.target_class is None else f' of class {cfg.target_class}'} "
                f"to seed from; ask for at most {pool:,}"
            )

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
            f"run `latentfuzz zoo measure {gen_name}`"
        )
    space = SearchSpace(gen.latent_shape, float(low), float(high), ds.num_classes)
    why = strategy_cls.check_generator(gen)
    if why is not None:
        raise ConfigError(why)

    hashes = {gen_name: zoo.load_card(gen_name, models_root)["sha256"]}
    for name in (clf_name, clf_b_name):
        if name is not None:
            hashes[name] = (
                zoo.sha256(Path(name))
                if Path(name).is_file()
                else zoo.load_card(name, models_root)["sha256"]
            )
    return Resolved(
        config=cfg,
        dataset=ds,
        generator=gen,
        generator_name=gen_name,
        classifier=clf,
        classifier_name=clf_name,
        strategy=strategy_cls(params, space),
        fitness=fitness_cls(),
        criterion=criterion_cls(),
        model_hashes=hashes,
        classifier_b=clf_b,
        classifier_b_name=clf_b_name,
    )
