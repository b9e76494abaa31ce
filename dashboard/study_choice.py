"""Whether the campaigns chosen on the New study form can make one study, said as they are
chosen: a study labels either one classifier's failing seeds or the inputs two classifiers
disagree on, and a mix was refused only at "Create study", in the CLI's words."""

from __future__ import annotations

import pandas as pd

from dashboard.text import campaign_label, md_text

#: The form's checkbox, as the sentences below name it.
TRIGGERING = "Triggering inputs instead"
#: Campaigns a sentence names one by one; more are counted.
NAMED = 3


def named(campaigns: pd.DataFrame, ids: list[str]) -> str:
    """ "walk nsga (20261127-121143-7c91) and walk ga (…)", as Markdown text."""
    names = dict(zip(campaigns["id"], campaigns["name"], strict=True))
    shown = [md_text(campaign_label(c, names.get(c))) for c in ids[:NAMED]]
    if len(ids) > NAMED:
        return ", ".join(shown) + f" and {len(ids) - NAMED} more"
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def kind_problem(campaigns: pd.DataFrame, chosen: list[str], triggering: bool) -> str | None:
    """Why `chosen` (ids of `campaigns`, which has a classifier_b column) cannot be one
    study with the checkbox `triggering` as it is, in the form's words; None when it can."""
    picked = campaigns[campaigns["id"].isin(chosen)]
    order = {c: i for i, c in enumerate(chosen)}  # named in the order they were chosen
    picked = picked.iloc[picked["id"].map(order).argsort()]
    two = picked.loc[picked["classifier_b"].notna(), "id"].tolist()
    one = picked.loc[picked["classifier_b"].isna(), "id"].tolist()

    def verb(ids: list[str], singular: str, plural: str) -> str:
        return singular if len(ids) == 1 else plural

    if two and one:
        return (
            f"{named(picked, two)} {verb(two, 'tests', 'test')} two classifiers and "
            f"{named(picked, one)} {verb(one, 'tests', 'test')} one: a study labels either "
            "the images two classifiers disagree on or one classifier's failures. Choose "
            "campaigns of one kind."
        )
    if two and not triggering:
        return (
            f"{named(picked, two)} {verb(two, 'tests', 'test')} two classifiers: tick "
            f"“{TRIGGERING}” to label the images they disagree on."
        )
    if one and triggering:
        return (
            f"{named(picked, one)} {verb(one, 'tests', 'test')} one classifier: "
            f"{verb(one, 'it has', 'they have')} no images two classifiers disagree on. "
            f"Untick “{TRIGGERING}” to label {verb(one, 'its', 'their')} failing seeds."
        )
    return None


#: The settings an engine refusal names, as the form labels them (for `in_words`).
FORM_NAMES = {"triggering": TRIGGERING, "seed_images": "Also show the seed images"}
