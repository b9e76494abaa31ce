"""What every model card records about where it came from: the command that made it, when,
and with which torch and thread count."""

from __future__ import annotations

import shlex
import sys
from datetime import UTC, datetime
from typing import Any

import torch


def command_line() -> str:
    """The `latentfuzz ...` command line of this process, quoted as a shell would need it."""
    return "latentfuzz " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def stamp() -> dict[str, Any]:
    """The card's creation time (UTC, seconds), torch version and torch's thread count."""
    return {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
    }
