"""Reading a YAML file of settings: a campaign config, a label-import or results mapping.
One reader, so every one of them refuses a folder, a missing file, a syntax error and a
list in the same one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from engine.core.errors import ConfigError, yaml_problem


def read_mapping(path: str | Path, what: str = "config file") -> dict[str, Any]:
    """The mapping of settings in the YAML file at `path` ({} for an empty file); `what`
    names the file in the refusals."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{what} {path} is a folder; give the path of a YAML file")
    if not path.is_file():
        raise ConfigError(f"{what} {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError:
        raise ConfigError(
            f"{what} {path} is not UTF-8 text (a binary file, or text in another encoding); "
            "give a YAML file saved as UTF-8"
        ) from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{what} {path} is {yaml_problem(e)}") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{what} {path} holds a {type(data).__name__}, expected a mapping of settings"
        )
    return data
