"""What a Stable Diffusion pipeline folder from elsewhere may name, checked before diffusers
reads any of it.

A pipeline folder is downloaded or copied from someone else: its `model_index.json` names
the components (each a subfolder), the subfolders' configs can name files (a tokenizer's
`vocab_file`, which transformers before 5.x opened as written), and any entry can be a
symlink. Each is resolved and must lie inside the folder, or, for a Hugging Face hub
snapshot (``models--org--name/snapshots/<revision>``), inside the model's cache folder,
whose ``blobs/`` the snapshot's files link to. Declared sizes (the UNet's ``sample_size``)
are bounded before a latent of that size is drawn.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from engine.core.errors import ModelError
from engine.core.untrusted import bounded, inside_any, quote

PIPELINE_INDEX = "model_index.json"
#: The UNet's latent side at most: 4096 px images (SDOptions' largest resolution) at the
#: VAE's usual scale factor of 8. SD 1.5 has 64, SDXL 128.
MAX_SAMPLE_SIZE = 512
#: Config keys transformers records but never opens: their values are often the author's
#: own absolute cache paths, which refusing would turn away real pipelines.
NOT_OPENED = {"special_tokens_map_file", "name_or_path", "_name_or_path"}
#: Largest model_index.json read: real ones are under 1 KB (a component per line).
MAX_INDEX_BYTES = 2**20


def allowed_roots(folder: Path) -> list[Path]:
    """Where the folder's entries may lead: the folder, and for a hub snapshot the model's
    cache folder (its files are symlinks to ../../blobs/<hash>)."""
    folder = folder.resolve()
    roots = [folder]
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        roots.append(folder.parent.parent)
    return roots


def read_index(folder: Path) -> dict[str, Any]:
    """model_index.json as an object; ModelError in one line when it is not one. A link
    is judged by where it leads, and the size bounded, before a byte of it is read."""
    roots = allowed_roots(folder)
    path = roots[0] / PIPELINE_INDEX
    if path.is_symlink():
        target = Path(os.readlink(path))
        lead = target if target.is_absolute() else path.parent / target
        inside_any(roots, lead, f"symlink {quote(PIPELINE_INDEX)}", source=str(folder))
    try:
        size = path.stat().st_size
    except OSError as e:
        raise ModelError(f"{path}: not readable ({e})") from None
    if size > MAX_INDEX_BYTES:
        raise ModelError(
            f"{path} is {size:,} bytes, expected at most {MAX_INDEX_BYTES:,} (a component "
            "per line); the folder is damaged or not a diffusers pipeline"
        )
    try:
        index = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as e:
        # RecursionError: 200,000 nested brackets, a traceback from json's decoder.
        raise ModelError(f"{path}: not readable JSON ({(str(e).splitlines() or [e])[0]})") from None
    if not isinstance(index, dict):
        raise ModelError(
            f"{path} holds a JSON {type(index).__name__}, expected an object mapping each "
            'component to [library, class] (e.g. "unet": ["diffusers", '
            '"UNet2DConditionModel"]); the folder is damaged or not a diffusers pipeline'
        )
    return index


def _file_values(config: Any) -> list[tuple[str, str]]:
    """(key, value) of every string under a ``*_file`` or ``*_files`` key, at any depth
    (walked with a stack: a config nested thousands deep is no recursion error)."""
    found, stack = [], [("", config)]
    while stack:
        key, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((str(k), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((key, v) for v in value)
        elif isinstance(value, str) and key.endswith(("_file", "_files")) and key not in NOT_OPENED:
            found.append((key, value))
    return found


def check_folder(folder: Path) -> dict[str, Any]:
    """The folder's model_index.json, once every component, every entry below the folder
    and every file a subfolder config names is found to lie inside the allowed roots
    (UntrustedFileError otherwise), and the UNet's sample size is bounded."""
    roots = allowed_roots(folder)
    index = read_index(folder)
    source = str(folder / PIPELINE_INDEX)
    for name, value in index.items():
        if not name.startswith("_") and isinstance(value, list):
            inside_any(roots, name, f"component {quote(name)}", source=source)
    # Only symlinks can lead out (the root is resolved, and a symlinked folder is not
    # entered: its link is what is checked), each judged by where it leads.
    for entry in sorted(roots[0].rglob("*")):
        rel = entry.relative_to(roots[0]).as_posix()
        if entry.is_symlink():
            target = Path(os.readlink(entry))
            lead = target if target.is_absolute() else entry.parent / target
            inside_any(roots, lead, f"symlink {quote(rel)}", source=str(folder))
        if entry.suffix == ".json" and entry.is_file() and entry.name != PIPELINE_INDEX:
            for key, value in _file_values(_json(entry)):
                # Opened as written, so a relative name is taken from the working folder.
                inside_any(roots, Path.cwd() / value, f"{key} in {rel}", source=str(folder))
    _check_sample_size(roots[0] / "unet" / "config.json")
    return index


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return None  # not a config we can read: diffusers says so when it loads it


def _check_sample_size(path: Path) -> None:
    """The UNet's sample_size: a whole number (or [height, width]) from 1 to
    MAX_SAMPLE_SIZE, checked before a latent that big is drawn (1e9 asked for terabytes)."""
    config = _json(path)
    if not isinstance(config, dict) or config.get("sample_size") is None:
        return  # no UNet config or size: diffusers refuses or defaults in its own words
    size = config["sample_size"]
    field = f"sample_size in {path}"
    fix = "the UNet's latent side is 64 for SD 1.5 and 128 for SDXL: the folder is damaged"
    for side in size if isinstance(size, list) else [size]:
        if isinstance(side, bool) or not isinstance(side, (int, float)):
            raise ModelError(f"{field} is {quote(size)}, expected a whole number; {fix}")
        bounded(side, MAX_SAMPLE_SIZE, field, fix=fix)
        if side < 1 or side != int(side):
            raise ModelError(
                f"{field} is {quote(size)}, expected a whole number from 1 to "
                f"{MAX_SAMPLE_SIZE}; {fix}"
            )
