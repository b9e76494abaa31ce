"""User-supplied strings (campaign, study and labeller names, file names) shown as text."""

from __future__ import annotations

import html
import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|$~>])")


def md_text(value: object) -> str:
    """A user-supplied string as literal text inside Markdown (HTML allowed or not): no
    markup, no table column breaks, no math, one line."""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(str(value), quote=False)).replace("\n", " ")


def campaign_label(cid: str, name: object) -> str:
    """"name (id)" for a pick list; the id alone where the campaign has no name of its own
    (its name is then its id, and showed twice)."""
    if not isinstance(name, str) or not name or name == cid:
        return cid
    return f"{name} ({cid})"
