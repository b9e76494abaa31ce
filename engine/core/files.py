"""Model files: a module's weights as safetensors, and a file's SHA-256.

Leaves shared by the plug-in families (a generator loads its weights), the zoo (which
writes them and records their hash) and the commands that import or pin model files.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

#: The weights file of a model folder.
WEIGHTS = "weights.safetensors"


def sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, as hex; read in 1 MiB chunks (SD files are GBs)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def save_weights(module: torch.nn.Module, folder: Path, fp16: bool = True) -> Path:
    """Write the module's state into ``folder/WEIGHTS`` (floating tensors as fp16 when
    ``fp16``); returns the file's path."""
    state = {
        k: (v.half() if fp16 and v.is_floating_point() else v).contiguous()
        for k, v in module.state_dict().items()
    }
    path = folder / WEIGHTS
    save_file(state, str(path))
    return path


def load_weights(module: torch.nn.Module, folder: Path) -> None:
    """Load ``folder/WEIGHTS`` into the module, floating tensors as fp32 (the zoo stores
    fp16 where its metrics show it costs nothing)."""
    state = load_file(str(folder / WEIGHTS))
    module.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state.items()})
