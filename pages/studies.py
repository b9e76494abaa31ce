"""Validity studies: create one from campaigns, follow it, settle disagreements, read the
validity and label-preservation figures with their confidence intervals and agreement."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from pydantic import ValidationError

from dashboard.annotations import annotation_editor
from dashboard.calibration import calibration_section
from dashboard.components import load_image, study_table
from dashboard.data import get_home, get_store
from dashboard.form_check import in_words, limits, problems
from dashboard.repair import study_repair
from dashboard.study_choice import FORM_NAMES, TRIGGERING, kind_problem
from dashboard.study_import import import_form
from dashboard.text import campaign_label, md_text, person_name, table_markdown
from dashboard.url_state import url_unknown, url_widget
from engine.api import (
    ConfigError,
    DatasetError,
    get_dataset,
    label_exchange,
    label_stats,
    labelling,
    sample_size,
    to_csv_bytes,
)
from store import campaigns as sc
from store import judging
from store import labels as ls

#: The New study form's label of each setting, so that a refusal names what the user sees.
STUDY_NAMES = {
    "name": "Name",
    "sample": "Images to label",
    "k": "Labellers per image (k)",
    "rule": "Verdict rule",
    "gold_rate": "Gold items",
    "seed": "Random seed",
}

#: The "who is right" table's columns in words (they showed as humans_agree_a ...).
SIDES = {
    "campaign_id": "campaign",
    "humans_agree_a": "A's label",
    "humans_agree_b": "B's label",
    "humans_agree_neither": "another label",
}

store, home = get_store(), get_home()
st.title("Validity studies")
studies = ls.validity_studies(store)
# Only the open tab runs (it is in the URL): every run computed all four, 27 queries.
tab_stats, tab_adj, tab_cal, tab_new = st.tabs(
    ["Statistics", "Adjudication", "Calibration", "New study"], key="tab", bind="query-params"
)

if tab_new.open:
    with tab_new:
        st.subheader("From campaigns")
        campaigns = sc.list_campaigns(store)
        campaigns = campaigns[(campaigns["status"] != "running") & (campaigns["misclassified"] > 0)]
        if campaigns.empty:
            st.info("No finished campaign with a misclassification yet.")
        else:
            names = dict(zip(campaigns["id"], campaigns["name"], strict=True))
            # The newest campaign of one classifier: a differential one is refused by a study
            # of failing seeds, the form's default (its triggering inputs are a tick away).
            plain = campaigns.loc[campaigns["classifier_b"].isna(), "id"].tolist()
            chosen = st.multiselect(
                "Campaigns",
                list(names),
                default=(plain or list(names))[:1],
                format_func=lambda c: campaign_label(c, names[c]),
            )
            # Beside the choice, not in the form: a mix of one- and two-classifier campaigns,
            # or two-classifier ones without it, was refused only at Create, in CLI words.
            triggering = st.checkbox(
                TRIGGERING,
                False,  # (a longer label was cut off)
                help="differential campaigns: the images two classifiers label "
                "differently; the statistics then say which classifier people agree with",
            )
            why_not = kind_problem(campaigns, chosen, triggering)
            if why_not:
                st.warning(why_not)
            count = labelling.triggering_inputs if triggering else labelling.failing_seeds
            population = len(count(store, chosen)) if chosen and not why_not else 0
            planned = sample_size(population) if population else 0
            what = "triggering input" if triggering else "failing image"
            if not why_not:  # ("0 failing images" beside a mix read as nothing to label)
                st.caption(
                    f"{population} {what}{'s' * (population != 1)}; the planner proposes "
                    f"**{planned}** for a 95% confidence level and a 5% margin of error "
                    "(Cochran, finite-population correction)."
                )
            with st.form("new_study", enter_to_submit=False):  # Enter commits a field only
                a, b, c, d = st.columns(4)
                name = a.text_input("Name", "")
                # The model's bound, checked at Create: Streamlit's own min and max refused a
                # typed -4 with a red box and no word, and Create did nothing.
                bounds = limits(labelling.StudyConfig, "sample")
                sample = b.number_input(
                    "Images to label",
                    value=max(1, planned),
                    **{
                        **bounds,
                        "help": (
                            f"{bounds['help'] or ''} Drawn from the {population} {what}s; "
                            "more than that labels them all."
                        ),
                    },
                )
                k = c.number_input(
                    "Labellers per image (k)", value=2, **limits(labelling.StudyConfig, "k")
                )
                rule = d.selectbox(
                    "Verdict rule", ["icst", "majority"], help="majority vote needs k >= 3"
                )
                e, f, g = st.columns(3)
                gold = e.slider(
                    "Gold items (real test images)",
                    0.0,
                    0.5,
                    0.1,
                    0.05,
                    help="share of the study; measures each labeller's accuracy",
                )
                seed_images = f.checkbox(
                    "Also show the seed images",
                    False,
                    disabled=triggering,
                    help="triggering inputs have no seed image beside them" if triggering else None,
                )
                seed = g.number_input(
                    "Random seed", value=0, **limits(labelling.StudyConfig, "seed")
                )
                create = st.form_submit_button(
                    "Create study",
                    type="primary",
                    disabled=not chosen or bool(why_not),
                    help=why_not or ("Choose campaigns above" if not chosen else None),
                )
                if create:
                    try:
                        raw = dict(
                            campaigns=chosen,
                            name=name or None,
                            k=k,
                            rule=rule,
                            sample=sample,
                            seed_images=seed_images and not triggering,
                            gold_rate=gold,
                            seed=seed,
                            triggering=triggering,
                        )
                        cfg = labelling.StudyConfig(**raw)
                        sid = labelling.create_study(store, home, cfg)
                    except ValidationError:  # sentences naming the fields, not pydantic's dump
                        wrong = problems(labelling.StudyConfig, raw, STUDY_NAMES)
                        st.error(
                            "Cannot create the study; please fix:\n"
                            + "\n".join(f"- {md_text(w)}" for w in wrong)
                        )
                    except (ConfigError, ValueError) as err:  # the engine's, in the form's words
                        said = in_words(str(err), {**STUDY_NAMES, **FORM_NAMES})
                        st.error(f"Cannot create the study: {md_text(said)}")
                    else:
                        # The sidebar shows the new study now (it stayed on the one before).
                        st.query_params["study"] = sid
                        studies = ls.validity_studies(store)
                        st.success(f"Created {sid}.")
                        st.page_link(
                            "../pages/label.py",
                            label="Open the Label page",
                            query_params={"study": sid},
                        )

        st.divider()
        if imported := import_form(store, home):
            st.query_params["study"] = imported  # the sidebar shows it, as after Create
            studies = ls.validity_studies(store)

if studies.empty:
    tab_stats.info(
        "No study yet: create one, or import a study file, in the New study tab "
        "(or `latentfuzz labels import FILE --dataset NAME`)."
    )
    st.stop()

ids = studies["id"].tolist()
names = dict(zip(studies["id"], studies["name"], strict=True))
# In the URL both ways (it was only read): a reload, or a shared link, keeps the study.
sid = url_widget(
    st.sidebar.selectbox, "Study", "study", ids, ids[0], say_unknown=False, format_func=names.get
)
if gone := url_unknown("study"):
    # At the top of the tab shown: written after the tabs, it sat below the whole tab,
    # and the link read as silently opening another study.
    where = next((t for t in (tab_stats, tab_adj, tab_cal) if t.open), st.sidebar)
    where.warning(
        f"The link names study {md_text(gone[0][:40])}, which this store does not hold "
        f"(deleted, or from another home?); showing {md_text(names[sid])}."
    )
s, v, j = label_stats.load(store, sid)
try:
    ds = get_dataset(s["dataset"])
except DatasetError as e:  # a user's dataset removed or moved since
    st.error(f"Cannot show this: {e}")
    st.stop()

if tab_stats.open:
    with tab_stats:
        annotation_editor(store, "study", sid)
        p = judging.progress(store, sid)
        a, b, c, d = st.columns(4)
        a.metric("images", p["items"])
        b.metric("answers", f"{p['done']} of {p['wanted']}")
        c.metric("labellers", j["labeller"].nunique())
        d.metric("undecided", len(label_stats.undecided(v)))
        st.caption(
            f"rule {s['rule']}, k = {s['k']}; bootstrap: {s['resamples']} resamples, seed "
            f"{s['seed']}; validity over all images, preservation over valid ones"
        )
        # Split by strategy too where the study's campaigns use several (as `labels report`).
        by_strategy = label_stats.with_strategy(store, v)
        mixed = by_strategy["strategy"].nunique() > 1
        for title, by in (
            (f"By {'strategy, ' * mixed}generator and perturbation", ["generator", "preset"]),
            ("By campaign", ["campaign_id"]),
        ):
            st.subheader(title)
            t = label_stats.group_table(by_strategy, by, int(s["seed"]), int(s["resamples"]))
            if t.empty:
                st.info("No image has all its answers yet.")
                break
            st.markdown(table_markdown(study_table(t, by, store)))
        sides = label_stats.model_agreement(v, s["rule"])
        if len(sides):
            st.subheader("Which classifier people agree with")
            st.caption(
                "triggering inputs of differential campaigns: of the images judged valid, "
                "those the labellers give classifier A's label, B's, or another"
            )
            st.markdown(table_markdown(sides.rename(columns=SIDES)))
        st.subheader("Agreement and labellers")
        ag = label_stats.agreement_table(j, v)
        a, b, c = st.columns(3)
        names = (
            ("Cohen's kappa", "cohen_kappa"),
            ("Fleiss' kappa", "fleiss_kappa"),
            ("Krippendorff's alpha", "krippendorff_alpha"),
        )
        for col, (label, k) in zip((a, b, c), names, strict=True):
            col.metric(label, "–" if ag[k] is None else f"{ag[k]:.3f}")
        # As text: the Styler's na_rep did not reach the browser, which showed "None".
        lt = label_stats.labeller_table(j, v)
        shown = lambda col, fmt: ["–" if pd.isna(x) else format(x, fmt) for x in lt[col]]  # noqa: E731
        st.markdown(
            table_markdown(
                lt.assign(
                    gold_accuracy_pct=shown("gold_accuracy_pct", ".0f"),
                    median_seconds=shown("median_seconds", ".1f"),
                ).rename(
                    columns={
                        "gold_accuracy_pct": "gold accuracy %",
                        "median_seconds": "median seconds per answer",
                    }
                )
            )
        )
        a, b = st.columns(2)
        a.download_button(
            "Download raw judgements (CSV)",
            # Made on the click: each re-read the whole study at every run.
            lambda: to_csv_bytes(label_exchange.raw_export(store, sid)),
            f"{sid}-judgements.csv",
            "text/csv",
        )
        b.download_button(
            "Download one row per image (CSV)",
            lambda: to_csv_bytes(label_exchange.wide_export(store, sid)),
            f"{sid}-images.csv",
            "text/csv",
        )

if tab_adj.open:
    with tab_adj:
        queue = label_stats.undecided(v)
        if queue.empty:
            st.success("No undecided image: nothing to settle.")
        else:
            typed = st.text_input(
                "Reviewer", key="reviewer", placeholder="your name, to settle images"
            )
            reviewer, why = person_name(typed, "verdict")
            if typed and why:  # spaces only were stored as the reviewer
                st.error(why)
            elif not reviewer:  # the buttons below wait for it, greyed out without a word
                st.caption(
                    "Type your name as reviewer to settle an image: the verdict is stored with it."
                )
            item = queue.iloc[0]
            st.caption(
                f"{len(queue)} undecided image{'s' * (len(queue) != 1)}; the labellers' "
                "answers are kept as given."
            )
            left, right = st.columns([1, 2])
            img = load_image(home, item["image"], scale=8)
            if img is not None:
                left.image(img, width=224)
            answers = ", ".join(
                labelling.answer_text(int(x), ds.class_names, ds.domain) for x in item["answers"]
            )
            right.markdown(f"Answers: **{answers}**. Which class is this?")
            cols = right.columns(5)
            for i, name in enumerate(ds.class_names):
                if cols[i % 5].button(name, key=f"adj{i}", disabled=not reviewer):
                    judging.adjudicate(store, sid, int(item["item_id"]), reviewer, i)
                    st.rerun()
            for name, text, value, _ in labelling.marker_choices(ds, unsure=False):
                if right.button(text, key=f"adj_{name}", disabled=not reviewer):
                    judging.adjudicate(store, sid, int(item["item_id"]), reviewer, value)
                    st.rerun()
        settled = ls.adjudications(store, sid)
        if len(settled):
            st.caption(f"{len(settled)} image{'s' * (len(settled) != 1)} settled by adjudication")
            shown = settled.assign(
                verdict=[
                    labelling.answer_text(int(a), ds.class_names, ds.domain)
                    for a in settled["answer"]
                ]
            )[["item_id", "verdict", "reviewer", "note", "decided_at"]]
            st.dataframe(
                shown.rename(columns={"item_id": "image", "decided_at": "when"}), hide_index=True
            )
            a, b = st.columns([2, 1], vertical_alignment="bottom")
            back = a.selectbox(
                "Take back the verdict on image",
                settled["item_id"].tolist(),
                key=f"take_back:{sid}",
            )
            if b.button("Take back", help="the image goes back to the queue above"):
                judging.unadjudicate(store, sid, int(back))
                st.rerun()

if tab_cal.open:
    with tab_cal:
        calibration_section(store, home, sid)
if tab_stats.open:
    with tab_stats:
        study_repair(store, home, sid, s, v)
