"""Forms that explain themselves: widget limits from the pydantic models that validate,
every invalid field named in a sentence, and the projected cost of a campaign.

The New campaign and Validity studies pages read bounds and messages from here, so a
limit is written once, in the model (engine/campaign/config.py, the strategies' Params), and the
form can neither allow what Launch then refuses nor refuse what the engine accepts.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ValidationError

from dashboard.param_form import allowed, label

#: Largest integer a browser's number field holds exactly (JavaScript's safe integer).
JS_SAFE = 2**53 - 1
#: A campaign projected to run longer than this asks for confirmation first.
CONFIRM_SECONDS = 600

#: What each strategy is, said beside the id the CLI and configs use: the picker offered
#: bare ids ("interpolate", "nsga2"). A strategy added later shows its id alone until
#: it is worded here.
STRATEGY_WORDS = {
    "fgsm": "FGSM, gradient sign steps in pixel space",
    "ga": "GIFTbench's genetic algorithm, defects fixed",
    "interpolate": "Argus, interpolation towards other classes (needs a VAE)",
    "mutation": "metamorphic pixel mutations (DeepHunter)",
    "nsga2": "NSGA-II, two classifiers disagree (DiffGAN)",
    "pgd": "PGD, projected gradient steps in pixel space",
    "pixel-ga": "SINVAD's pixel-space baseline",
    "random": "random search, the equal-budget baseline",
    "sinvad": "SINVAD's boundary search",
}


def strategy_words(name: str) -> str:
    """A strategy as the New campaign picker offers it: "nsga2: NSGA-II, ... (DiffGAN)"."""
    return f"{name}: {STRATEGY_WORDS[name]}" if name in STRATEGY_WORDS else name


def limits(model: type[BaseModel], field: str) -> dict[str, Any]:
    """An int field's number_input settings: the model's range in its help, and only the
    browser's own limit as a bound. Streamlit's min_value and max_value refuse a typed
    value silently (a red box, the reason in a tooltip, and Launch did nothing), so the
    model's bounds are checked at Launch by `problems`, which names the field and the
    value in a sentence."""
    rng = allowed(model.model_fields[field])
    return {
        "help": rng[0].upper() + rng[1:] + "." if rng else None,
        "min_value": -JS_SAFE,
        "max_value": JS_SAFE,
    }


#: A setting in a model's own message, with its value if given: `elites=25`, `step`.
_SETTING = re.compile(r"\b([a-z_]+)\b(?:=(<[^>]*>|[^\s,;]+?)(?=[\s,;]|\.?$))?")


def _labelled(names: dict[str, str]):
    """`elites=25` -> `Elites = 25`; a bare `init_step` -> `Initial step`; a bare word that
    is also a short setting's name (`k`, `step`) stays a word."""

    def sub(m: re.Match) -> str:
        if m[1] not in names or (m[2] is None and "_" not in m[1]):
            return m[0]
        return names[m[1]] + (f" = {m[2]}" if m[2] else "")

    return sub


def _sentence(err: dict[str, Any], names: dict[str, str]) -> str:
    """One pydantic error as a sentence that names the field as the form labels it."""
    field = str(err["loc"][0]) if err["loc"] else ""
    who = names.get(field, field.replace("_", " ").capitalize()) if field else ""
    got, ctx, kind = err.get("input"), err.get("ctx") or {}, err["type"]
    entered = "" if isinstance(got, dict) else f" (you entered {got!r})"
    text = {
        "greater_than_equal": f"must be at least {ctx.get('ge')}",
        "greater_than": f"must be more than {ctx.get('gt')}",
        "less_than_equal": f"must be at most {ctx.get('le')}",
        "less_than": f"must be less than {ctx.get('lt')}",
        "string_too_long": f"must be at most {ctx.get('max_length')} characters",
        "extra_forbidden": "is not a setting here",
        "finite_number": "must be a finite number",
    }.get(kind)
    if text is None:  # a model's own check: already a sentence, minus pydantic's prefix
        text = err["msg"].removeprefix("Value error, ")
        # ...written for the config file ("elites=25 must be smaller than
        # population=25"): each setting named as the form labels it.
        text = _SETTING.sub(_labelled(names), text)
        return f"{who}: {text}." if who else f"{text}."
    if kind == "string_too_long":
        entered = f" (it has {len(got)})"
    return f"{who} {text}{entered}."


def problems(model: type[BaseModel], raw: dict[str, Any], names: dict[str, str]) -> list[str]:
    """Every reason `raw` is not a valid `model`, one sentence each; [] when valid.
    `names`: field -> the label its widget shows (default: the field's own label)."""
    names = {f: label(f, i) for f, i in model.model_fields.items()} | names
    try:
        model(**raw)
    except ValidationError as e:
        return [_sentence(err, names) for err in e.errors()]
    return []


def projected_seconds(
    seeds: int, evaluations_per_seed: int, cards: list[dict[str, Any]]
) -> float | None:
    """seeds x evaluations per seed x measured milliseconds per image (generator plus
    classifier, batched, from their cards' `inference`); None when a card has no
    measurement (an uploaded classifier, a model never benched)."""
    ms = 0.0
    for card in cards:
        inf = (card or {}).get("inference") or {}
        per = inf.get("ms_per_image_b25") or inf.get("ms_per_image_b1")
        if per is None:
            return None
        ms += float(per)
    return seeds * evaluations_per_seed * ms / 1000


def duration(seconds: float) -> str:
    """A rough human duration: '40 s', '12 min', '3.5 h', '2.1 days'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


#: A CLI flag in parentheses, with its value if any: " (--classifier-b)", " (--target C)".
_FLAG_ASIDE = re.compile(r"\s*\(--[a-z][a-z0-9-]*(?: [^)]*)?\)")
#: A field path into the config's dicts: strategy_params.perturbation.
_FIELD_PATH = re.compile(r"\b(?:strategy_params|generator_params)\.([a-z_][a-z0-9_]*)")
_FLAG = re.compile(r"--([a-z][a-z0-9-]*)")


def in_words(text: str, names: dict[str, str]) -> str:
    """An engine message (written for the config file and the CLI) in the form's words:
    flags in parentheses go, and field paths, flags and settings become the labels in
    ``names`` (field -> label); `elites=25` reads `Elites = 25`. Starts with a capital."""
    text = _FLAG_ASIDE.sub("", text)

    def quoted(field: str) -> str:
        return f"“{names.get(field, field.replace('_', ' ').capitalize())}”"

    text = _FIELD_PATH.sub(lambda m: quoted(m[1]), text)
    text = _FLAG.sub(lambda m: quoted(m[1].replace("-", "_")), text)

    def setting(m: re.Match) -> str:
        if m[1] not in names or (m[2] is None and "_" not in m[1]):
            return m[0]
        return f"{names[m[1]]} = {m[2]}" if m[2] else quoted(m[1])

    text = _SETTING.sub(setting, text)
    return text[:1].upper() + text[1:]


def _without_fix(text: str) -> str:
    """A plug-in's reason without its closing fix when that fix is a command-line flag
    ("...; 'gan' has none: use --generator vae"): the form says its own fix."""
    for sep in (": ", "; "):
        head, _, tail = text.rpartition(sep)
        if head and "--" in tail:
            return head
    return text


def choice_problems(
    choices: dict[str, Any], generator_card: dict[str, Any] | None, names: dict[str, str]
) -> list[str]:
    """Why the choices made so far (dataset, generator, classifiers, strategy, objective:
    config fields) cannot go together, one sentence each in the form's words; [] when
    they can. Asked of the plug-ins as Launch asks them, without loading a model: the
    strategy's `check_generator` (on the generator's traits, from its card) and the
    campaign's objectives (a fitness that compares two classifiers needs a second one)."""
    # Deferred (start-up time: loads torch, pydantic and every strategy).
    from engine.api import STRATEGIES, CampaignConfig, ConfigError, generator_traits, objectives

    strategy = STRATEGIES.get(choices["strategy"])
    said = []
    if strategy.generator_family is None and generator_card is not None:
        why = strategy.check_generator(generator_traits(generator_card))
        if why:
            said.append(
                f"{in_words(_without_fix(why), names)}: pick another generator or search strategy."
            )
    # The class to reach is set inside the form, after these choices: a stand-in here, so
    # that only the rules between the choices above are asked.
    stand_in = {"target": 1} if choices.get("fitness") == "targeted" else {}
    try:
        cfg = CampaignConfig(**{**choices, **stand_in})
    except ValueError:
        return said  # a field out of its bounds: Launch names it (`problems`)
    try:
        objectives(cfg)
    except ConfigError as e:
        said.append(in_words(str(e), names).rstrip(".") + ".")
    return said
