"""Where latentfuzz keeps its store and campaign files.

One rule for the CLI and the dashboard: ``--home`` if given, else ``$LATENTFUZZ_HOME``,
else ``~/.latentfuzz``.
"""

from __future__ import annotations

import os
from pathlib import Path

from engine.core.errors import LatentfuzzError

ENV_VAR = "LATENTFUZZ_HOME"
DEFAULT_HOME = Path("~/.latentfuzz")
DB_NAME = "latentfuzz.duckdb"


def home_path(home: str | os.PathLike[str] | None = None) -> Path:
    """The rule: `home` if given, else $LATENTFUZZ_HOME, else the default; nothing made."""
    raw = home if home is not None else os.environ.get(ENV_VAR) or DEFAULT_HOME
    return Path(raw).expanduser().resolve()


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """Return the data directory, creating it if needed."""
    path = home_path(home)
    if path.exists() and not path.is_dir():
        raise LatentfuzzError(
            f"data directory {path} is a file, expected a folder; move the file away or "
            f"pick another --home / ${ENV_VAR}"
        )
    if not path.exists() and not path.parent.is_dir():
        # A typo ("/nonexistent/deep") would otherwise become a new, empty home, folders
        # and all, and `campaigns` would say "no campaigns yet" about the wrong place.
        given = (
            "--home"
            if home is not None
            else f"${ENV_VAR}"
            if os.environ.get(ENV_VAR)
            else f"the default {DEFAULT_HOME}"
        )
        raise LatentfuzzError(
            f"data directory {path} (from {given}) does not exist, nor does the folder "
            f"{path.parent} it would go in; check the path, or create {path.parent} first"
        )
    try:
        path.mkdir(exist_ok=True)
    except OSError as e:
        raise LatentfuzzError(
            f"cannot create the data directory {path} ({e.strerror}); pick another --home "
            f"/ ${ENV_VAR}"
        ) from None
    global _current
    _current = path
    return path


#: The home this process resolved last: user models live under it (zoo.user_models_dir).
_current: Path | None = None


def use_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The home a command that only reads looks in (`models list`), by the same rule and
    without creating it: a home that does not exist holds no models of the user's."""
    global _current
    _current = home_path(home)
    return _current


def current_home() -> Path:
    """The home in use, without creating it: the last one resolved, else the default rule."""
    return _current if _current is not None else home_path()


def db_path(home: Path) -> Path:
    return home / DB_NAME


def campaign_dir(home: Path, campaign_id: str) -> Path:
    """Each campaign owns one directory; directories are never shared between campaigns."""
    return home / "campaigns" / campaign_id


def seed_dir(campaign_id: str, seed_idx: int) -> str:
    """A seed's folder relative to the home, as image paths are stored:
    ``campaigns/<id>/seed_0007``."""
    return f"campaigns/{campaign_id}/seed_{seed_idx:04d}"


REPO_ROOT = Path(__file__).resolve().parents[2]
MODELS_DIR = Path(os.environ.get("LATENTFUZZ_MODELS", REPO_ROOT / "models"))
