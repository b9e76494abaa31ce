"""Storing an uploaded file under the home, by a name the uploader cannot steer, and
making an uploaded model a model of the home (`register_upload`).

A browser sends the file name it likes: ``a/../../x.pt`` joined into a folder lands outside
it. The name is cut to a safe base name and prefixed with the content's hash, so equal
files share one path and different files never overwrite each other.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

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


def model_name(file_name: str) -> str:
    """A model name from an uploaded file's name: its safe base name without the suffix,
    starting with a letter or digit (what `latentfuzz models import` accepts)."""
    stem = safe_name(file_name, "model.pt").rsplit(".", 1)[0]
    return stem.lstrip("._-")[:64] or "model"


def register_upload(file_name: str, data: bytes, importer: Callable[[Path], dict]) -> dict:
    """Make an uploaded file a model of the home, as `latentfuzz models import` does:
    ``importer(path)`` checks, measures and cards a temporary copy named as uploaded (a
    safe base name), and returns the card. The copy is removed either way; a refusal
    names the file as the user sent it, never the temporary path."""
    # Deferred (start-up time: loads torch, pydantic).
    from engine.api import LatentfuzzError, resolve_home

    folder = Path(tempfile.mkdtemp(prefix="upload-", dir=resolve_home(None)))
    path = folder / safe_name(file_name)
    try:
        path.write_bytes(data)
        return importer(path)
    except LatentfuzzError as e:
        # The importer reads a copy of the copy (its staging folder): any path that ends
        # in the stored name is the upload.
        stored = re.compile(r"[^\s'\"(]*[/\\]" + re.escape(path.name) + r"\b")
        said = stored.sub(lambda _: file_name, str(e))
        raise type(e)(said) from e
    finally:
        shutil.rmtree(folder, ignore_errors=True)
