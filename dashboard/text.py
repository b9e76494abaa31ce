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
    """ "name (id)" for a pick list; the id alone where the campaign has no name of its own
    (its name is then its id, and showed twice)."""
    if not isinstance(name, str) or not name or name == cid:
        return cid
    return f"{name} ({cid})"


MAX_PERSON = 80  # a labeller's or reviewer's name; longer ones pushed the image off screen


def person_name(text: object, with_what: str = "answer") -> tuple[str | None, str | None]:
    """(the name, None), or (None, why not) for a name of spaces only or a long one: it
    was stored as "  ", and a blank labeller read as nobody in every table."""
    name = str(text or "").strip()
    if not name:
        return None, f"Type your name: it is stored with every {with_what}."
    if len(name) > MAX_PERSON:
        return None, f"A name of {len(name):,} characters; at most {MAX_PERSON}, please."
    return name, None
