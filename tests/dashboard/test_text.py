"""md_text: a user's string (a campaign's name) shows literally wherever the dashboard
writes Markdown (issue 36, point 5, found by a new user's walk): a name
`[link](http://x)` showed as a live link "http://x\\" in the Campaign page's title and in
Compare's table."""

from __future__ import annotations

import html
import re

import pytest

from dashboard.text import md_text

#: What Streamlit's Markdown rewrites in text once escapes are undone (remark-gfm's
#: autolink literals, remark-emoji's shortcodes, Streamlit's `:material/…:` icons).
REWRITTEN = [
    re.compile(r"(?i)(https?|ftp)://|www\."),  # a link
    re.compile(r"[-.\w+]+@[-\w]+"),  # an e-mail link
    re.compile(r":[\w+-]+:"),  # an emoji or an icon
]

NAMES = [
    "[link](http://x)",
    "see http://evil.com/a_b now",
    "WWW.x.org and www.y.org",
    "mail a@b.com",
    ":smile: :+1: :red[x] :material/home:",
    "<b>bold</b> **stars** `tick` $x$ ~~gone~~ | pipe # head",
    "12:30 a\\b",
]


def as_read(md: str) -> str:
    """The text a page shows for `md`: escapes and entities undone (CommonMark), the
    invisible word joiners dropped."""
    return html.unescape(re.sub(r"\\(.)", r"\1", md)).replace("\u2060", "")


@pytest.mark.parametrize("name", NAMES)
def test_a_name_is_shown_exactly_as_typed(name):
    assert as_read(md_text(name)) == name


@pytest.mark.parametrize("name", NAMES)
def test_a_name_gives_markdown_no_link_emoji_or_markup_to_rewrite(name):
    md = md_text(name)
    # Read raw (micromark's autolinks, where the escape became part of the link) and
    # after escapes are undone (the text rewrites).
    text = re.sub(r"\\(.)", r"\1", md)
    for pattern in REWRITTEN:
        assert not pattern.search(md), (name, md)
        assert not pattern.search(text), (name, text)
    assert "<" not in md and "\n" not in md
    # Every Markdown character escaped: no emphasis, code, math or table column break.
    assert not re.search(r"(?<!\\)[*_`$|~\[\]()]", md), md


def test_plain_words_are_left_alone():
    assert md_text("Budget kept by: whole generations") == "Budget kept by: whole generations"
    assert md_text("$x$") == "\\$x\\$"
