"""Words shown to people: user-supplied strings (campaign, study and labeller names, file
names) as literal text, and config settings in the glossary's words."""

from __future__ import annotations

import html
import re

import pandas as pd

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|$~>])")
#: Invisible, and not a word character: it splits a pattern without showing.
_JOIN = "\u2060"
# Streamlit's Markdown rewrites text after escapes are undone: it links `http://x`,
# `www.x` and `a@b.c` (a name `[link](http://x)` showed a live link "http://x\" with the
# escape inside it), draws `:smile:` as an emoji and `:red`/`:material/...:` as
# directives. A word joiner breaks each pattern; the colon's escape stops directives.
_COLON = re.compile(r":(?=[\w/\\])")
_WWW = re.compile(r"(?i)\b(www)(?=\\\.)")
_AT = re.compile(r"@(?=[\w-])")


def md_text(value: object) -> str:
    """A user-supplied string as literal text inside Markdown (HTML allowed or not): no
    markup, no links, emoji or directives, no table column breaks, no math, one line; the
    page shows exactly `value`, with no backslash."""
    text = _MD_SPECIAL.sub(r"\\\1", html.escape(str(value), quote=False)).replace("\n", " ")
    text = _COLON.sub("\\:" + _JOIN, text)
    text = _WWW.sub(r"\1" + _JOIN, text)
    return _AT.sub("@" + _JOIN, text)


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


#: A setting's name in the glossary's words (docs/concepts/glossary.md), for the config
#: paths Compare shows: grid axes, blocks, settings that differ ("Block:
#: strategy_params.perturbation = high" read as a field path).
SETTING_WORDS = {
    "seed": "random seed",
    "seeds": "seeds",
    "classifier_b": "classifier B",
    "target_class": "seed class",
    "target": "target class",
    "fitness": "objective",
    "criterion": "failure criterion",
    "validators": "validity filters",
    "evaluation_budget": "most evaluations per seed",
    "budget_rule": "budget kept by",
    "batch_size": "batch size",
    "stop_at_failure": "stop at the first failure",
    "strategy_params.perturbation": "perturbation",
    "strategy_params.generations": "generation budget",
    "strategy_params.evaluations": "evaluation budget per seed",
    "strategy_params.step": "mutation step",
    "strategy_params.init_step": "initial step",
    "strategy_params.elites": "elites",
    "strategy_params.population": "population",
    "strategy_params.init_noise": "initial noise",
    "strategy_params.mask_p": "reset-to-seed probability",
    "strategy_params.decay": "step decay",
    "strategy_params.grow": "step growth",
    "strategy_params.min_step": "smallest step",
    "strategy_params.max_step": "largest step",
}


def setting_label(path: str) -> str:
    """A config path in people's words: the glossary's word where it has one, else the
    last part with spaces ("strategy_params.lambda_steps" -> "lambda steps"), a
    generator's own settings said as such."""
    if path in SETTING_WORDS:
        return SETTING_WORDS[path]
    head, _, last = path.rpartition(".")
    words = last.replace("_", " ")
    return f"generator {words}" if head == "generator_params" else words


def table_markdown(df: pd.DataFrame, blank: str = "–") -> str:
    """A small table of figures as a Markdown table: every cell literal text (`md_text`),
    an empty cell `blank`, numbers right-aligned. Not a dataframe: the grid's code (1.2 MB
    of scripts, compiled by a browser on its first grid) was loaded for a few rows, and the
    grid cut column names short at 1,280 px."""
    numeric = [pd.api.types.is_numeric_dtype(t) for t in df.dtypes]

    def cell(v: object) -> str:
        if v is None or (isinstance(v, float) and v != v):
            return blank
        return str(v) if isinstance(v, int | float) and not isinstance(v, bool) else md_text(v)

    head = [md_text(c) for c in df.columns]
    rule = ["---:" if n else "---" for n in numeric]
    rows = [[cell(v) for v in r] for r in df.itertuples(index=False, name=None)]
    return "\n".join("| " + " | ".join(r) + " |" for r in [head, rule, *rows])
