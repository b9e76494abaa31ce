"""Ids: campaign ids in a safe charset (an id names a folder under the home), and the one
timestamped form new campaigns and studies get.

`--id ../../x` must not create a folder outside the home, and a reused id must not mix
two campaigns' rows (the store's keys would refuse them half-way through a campaign).
"""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime
from pathlib import Path

from engine.core.errors import ConfigError
from engine.core.home import campaign_dir

#: Letters, digits, '.', '_' and '-', starting with a letter or digit: no separators, no
#: "..", no hidden names, nothing a shell or a URL must quote.
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def timestamped_id(prefix: str = "") -> str:
    """`prefix` + the UTC time to the second + 4 random hex digits ("study-20261126-223000-
    9f1c"): sorts by creation, and two made in the same second still differ."""
    return prefix + datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def check_id_syntax(cid: str, flag: str = "--id") -> None:
    """Raise ConfigError unless `cid` is a safe campaign id (`flag`: the option that gave
    it, named in the advice)."""
    if not ID_PATTERN.fullmatch(cid):
        fresh = "keep the bundle's id" if flag == "--as" else "get a fresh one"
        raise ConfigError(
            f"campaign id {cid!r} is not allowed; expected 1-100 letters, digits, '.', '_' "
            f"or '-', starting with a letter or digit (leave {flag} out to {fresh})"
        )


def check_new_id(cid: str, store, home: Path) -> None:
    """Raise ConfigError unless `cid` is safe and used by no campaign row or folder."""
    check_id_syntax(cid)
    # Here, not at the top: core stays free of the store (grid specs want ID_PATTERN only).
    from store.writer import campaign_exists

    with store.read() as con:
        taken = campaign_exists(con, cid)
    if taken or campaign_dir(home, cid).exists():
        raise ConfigError(
            f"campaign id {cid!r} is taken; pick another --id, or `latentfuzz delete {cid}` first"
        )
