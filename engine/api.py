"""The dashboard's one door into the engine: `pages/` and `dashboard/` import engine names
from here only (an import-linter contract in pyproject.toml checks it), so the engine's
packages can change inside without a page noticing.

Names load on first use (PEP 562): the campaign runner, the strategies and the labelling
code import torch, pymoo and scikit-learn, about 8 s on a loaded machine, which the
Campaigns list and every other light page would otherwise wait for at the server's start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: name -> (module, attribute); attribute None: the module itself.
_NAMES: dict[str, tuple[str, str | None]] = {
    # errors pages catch
    "ConfigError": ("engine.core.errors", "ConfigError"),
    "LatentfuzzError": ("engine.core.errors", "LatentfuzzError"),
    "ModelError": ("engine.core.errors", "ModelError"),
    "DatasetError": ("engine.datasets", "DatasetError"),
    # the home, files
    "db_path": ("engine.core.home", "db_path"),
    "resolve_home": ("engine.core.home", "resolve_home"),
    "to_csv_bytes": ("engine.core.csv_io", "to_csv_bytes"),
    "open_image": ("engine.core.images", "open_image"),
    "read_frame": ("engine.core.images", "read_frame"),
    "frame_count": ("engine.core.images", "frame_count"),
    "inside": ("engine.core.untrusted", "inside"),
    # registries and configs
    "get_dataset": ("engine.datasets", "get_dataset"),
    "dataset_names": ("engine.datasets", "dataset_names"),
    "load_classifier_file": ("engine.classifiers", "load_file"),
    "STRATEGIES": ("engine.search.strategies", "STRATEGIES"),
    "FITNESS": ("engine.search.fitness", "FITNESS"),
    "BOUNDARY_UNCHANGED": ("engine.search.fitness", "BOUNDARY_UNCHANGED"),
    "CampaignConfig": ("engine.campaign.config", "CampaignConfig"),
    "parse_config": ("engine.campaign.config", "parse_config"),
    "resolve": ("engine.campaign.resolve", "resolve"),
    "objectives": ("engine.campaign.config", "objectives"),
    # models
    "zoo": ("engine.models.zoo", None),
    "bundled_generators": ("engine.studies.effectiveness", "bundled_generators"),
    "import_classifier": ("engine.models.importing", "import_classifier"),
    "import_generator": ("engine.models.importing", "import_generator"),
    "parse_floats": ("engine.models.importing", "parse_floats"),
    "parse_latent_shape": ("engine.models.importing", "parse_latent_shape"),
    "name_problem": ("engine.models.importing", "name_problem"),
    "NAME_RULES": ("engine.models.importing", "NAME_RULES"),
    "classifier_format": ("engine.models.sniff", "classifier_format"),
    "chance_note": ("engine.models.measure", "chance_note"),
    "rename_model": ("engine.models.manage", "rename_model"),
    "delete_model": ("engine.models.manage", "delete_model"),
    "user_cards": ("engine.models.manage", "user_cards"),
    "used_by": ("engine.models.manage", "used_by"),
    "generator_traits": ("engine.models.manage", "generator_traits"),
    # campaigns
    "startup": ("engine.campaign.startup", None),
    "new_campaign_id": ("engine.campaign.runner", "new_campaign_id"),
    "run_campaign": ("engine.campaign.runner", "run_campaign"),
    "zip_bytes": ("engine.io.export", "zip_bytes"),
    "check_zip": ("engine.io.export", "check_zip"),
    "imported_note": ("engine.io.import_results", "imported_note"),
    "confusion_rates": ("engine.studies.escape", "confusion_rates"),
    "escape_table": ("engine.studies.escape", "escape_table"),
    # repair (engine/repair/)
    "repair_events": ("engine.repair.run", "repair_events"),
    "RepairSettings": ("engine.repair.settings", "RepairSettings"),
    "REPAIR_REPORT": ("engine.repair.model", "REPORT"),
    # validity studies (labelling)
    "labelling": ("engine.labelling.validity", None),
    "label_stats": ("engine.labelling.statistics", None),
    "label_exchange": ("engine.labelling.exchange", None),
    "StudyConfig": ("engine.labelling.validity", "StudyConfig"),
    "create_study": ("engine.labelling.validity", "create_study"),
    "campaign_validity": ("engine.labelling.statistics", "campaign_validity"),
    "marker_choices": ("engine.labelling.validity", "marker_choices"),
    "sample_size": ("engine.labelling.agreement", "sample_size"),
    "INVALID": ("engine.labelling.agreement", "INVALID"),
    "ImportMapping": ("engine.labelling.importing", "ImportMapping"),
    "import_csv": ("engine.labelling.importing", "import_csv"),
    # validity filters calibrated on a study's verdicts
    "VALIDATORS": ("engine.validators", "VALIDATORS"),
    "study_calibration": ("engine.labelling.study_calibration", None),
    "calibration_headline": ("engine.labelling.calibration", "headline"),
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _NAMES[name]
    except KeyError:
        raise AttributeError(f"engine.api has no {name!r}; add it to _NAMES") from None
    value = importlib.import_module(module)
    value = value if attribute is None else getattr(value, attribute)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # the same names, for type checkers and the import-linter graph
    from engine.campaign import startup
    from engine.campaign.config import CampaignConfig, objectives, parse_config
    from engine.campaign.resolve import resolve
    from engine.campaign.runner import new_campaign_id, run_campaign
    from engine.classifiers import load_file as load_classifier_file
    from engine.core.csv_io import to_csv_bytes
    from engine.core.errors import ConfigError, LatentfuzzError, ModelError
    from engine.core.home import db_path, resolve_home
    from engine.core.images import frame_count, open_image, read_frame
    from engine.core.untrusted import inside
    from engine.datasets import DatasetError, dataset_names, get_dataset
    from engine.io.export import check_zip, zip_bytes
    from engine.io.import_results import imported_note
    from engine.labelling import exchange as label_exchange
    from engine.labelling import statistics as label_stats
    from engine.labelling import study_calibration
    from engine.labelling import validity as labelling
    from engine.labelling.agreement import INVALID, sample_size
    from engine.labelling.calibration import headline as calibration_headline
    from engine.labelling.importing import ImportMapping, import_csv
    from engine.labelling.statistics import campaign_validity
    from engine.labelling.validity import StudyConfig, create_study, marker_choices
    from engine.models import zoo
    from engine.models.importing import (
        NAME_RULES,
        import_classifier,
        import_generator,
        name_problem,
        parse_floats,
        parse_latent_shape,
    )
    from engine.models.manage import (
        delete_model,
        generator_traits,
        rename_model,
        used_by,
        user_cards,
    )
    from engine.models.measure import chance_note
    from engine.models.sniff import classifier_format
    from engine.repair.model import REPORT as REPAIR_REPORT
    from engine.repair.run import repair_events
    from engine.repair.settings import RepairSettings
    from engine.search.fitness import BOUNDARY_UNCHANGED, FITNESS
    from engine.search.strategies import STRATEGIES
    from engine.studies.effectiveness import bundled_generators
    from engine.studies.escape import confusion_rates, escape_table
    from engine.validators import VALIDATORS
