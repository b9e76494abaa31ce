"""Storing an uploaded file under the home, by a name the uploader cannot steer.

A browser sends the file name it likes: ``a/../../x.pt`` joined into a folder lands outside
it. The name is cut to a safe base name and prefixed with the content's hash, so equal
files share one path and different files never overwrite each other.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path

from engine.api import ModelError

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(name: str, default: str = "upload.pt") -> str:
    """The base name of `name` (either slash), in letters, digits, '.', '_' and '-', not
    starting with a dot; `default` when nothing is left."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    base = _UNSAFE.sub("_", base).lstrip(".")[:100]
    return base if base.strip("_") else default


def upload_path(home: Path, name: str, data: bytes) -> Path:
    """home/uploads/<hash>-<safe name>: equal bytes, one path."""
    return (
        home / "uploads"
    ).resolve() / f"{hashlib.sha256(data).hexdigest()[:16]}-{safe_name(name)}"


def save_upload(home: Path, name: str, data: bytes) -> Path:
    """Write `data` to home/uploads/<hash>-<safe name> and return the path (inside home)."""
    folder = (home / "uploads").resolve()
    path = upload_path(home, name, data)
    if path.resolve().parent != folder:  # cannot happen with a safe name; checked anyway
        raise ValueError(f"upload name {name!r} resolves outside {folder}")
    folder.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def accept_upload(home: Path, name: str, data: bytes, check: Callable[[Path], object]) -> Path:
    """Save an uploaded model and `check` it (load and validate). A file the check refuses
    is not kept: listed among the uploaded classifiers it looked usable. Its ModelError
    names the file as the user knows it, not by its stored path."""
    kept = upload_path(home, name, data).is_file()  # the same bytes, accepted before
    path = save_upload(home, name, data)
    try:
        check(path)
    except BaseException as e:
        if not kept:  # never a file that a campaign may use
            path.unlink(missing_ok=True)
        if isinstance(e, ModelError):
            raise ModelError(str(e).replace(str(path), name).replace(path.name, name)) from e
        raise
    return path
