"""The Repair section of the Campaign and Validity studies pages.

A repair runs as its own process (`latentfuzz repair`), as a campaign does
(dashboard/launch.py): the page stays responsive, and a rerun or a browser refresh neither
kills it nor forgets it, since its log lives in the home (launch/repair/SOURCE/NAME.log)
and its report beside the repaired model's card.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import repair_form as form
from dashboard.launch import failure
from dashboard.lineage import filter_words, repair_note
from dashboard.text import md_text
from engine.api import REPAIR_REPORT, zoo
from store import campaigns as sc

#: Processes this server started, polled so that an ended one is reaped (a zombie reads
#: as alive); one started before a restart was reparented, and is looked up by its pid.
_PROCS: dict[str, subprocess.Popen] = {}
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: The report's rows and columns in people's words (engine/cli/repair.py's headings).
ARMS = {
    "before": "before (the classifier as it is)",
    "repair": "repaired",
    "random": "control: real images instead",
    "no-validity": "control: failures not filtered",
}
COLUMNS = {
    "held_out_accuracy": "held-out accuracy",
    "failures_accuracy": "accuracy on the failures used",
    "fresh_failures_accuracy": "accuracy on new failures",
    "fresh_misclassified_pct": "new campaign: misclassified",
    "fresh_iterations_icst": "new campaign: iterations",
    "images_added": "images added",
    "added_accuracy": "accuracy on the images added",
}


def log_path(home: Path, source: str, name: str) -> Path:
    """The output of the repair process writing model `name` from `source`."""
    return home / "launch" / "repair" / re.sub(r"[^A-Za-z0-9._-]", "_", source) / f"{name}.log"


def latest(home: Path, source: str) -> str | None:
    """The model name of the newest repair launched from `source`, if any."""
    logs = sorted(log_path(home, source, "x").parent.glob("*.log"), key=os.path.getmtime)
    return logs[-1].stem if logs else None


def report(name: str) -> dict[str, Any] | None:
    """The repair's report (written last, beside the model's card), once it is done."""
    path = zoo.user_models_dir() / name / REPAIR_REPORT
    return json.loads(path.read_text()) if path.is_file() else None


def busy(home: Path, source: str) -> tuple[str, ...]:
    """The names of this source's repairs still running: the next proposal skips them."""
    logs = log_path(home, source, "x").parent.glob("*.log")
    return tuple(p.stem for p in logs if running(home, source, p.stem))


def running(home: Path, source: str, name: str) -> bool:
    proc = _PROCS.get(name)
    if proc is not None:
        return proc.poll() is None
    pid = log_path(home, source, name).with_suffix(".pid")
    try:
        os.kill(int(pid.read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


def start(home: Path, source: str, name: str, args: list[str]) -> None:
    """`latentfuzz repair ARGS --name NAME` in its own session, its output in the log."""
    log = log_path(home, source, name)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "engine.entry", "repair", *args, "--name", name]
            + ["--home", str(home)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    _PROCS[name] = proc
    log.with_suffix(".pid").write_text(str(proc.pid))


def free_name(base: str, busy: tuple[str, ...] = ()) -> str:
    """`base`, or base-2, base-3 ...: the first whose model and controls are all free and
    that no repair still running (`busy`) will write."""
    for i in range(1, 1000):
        name = base if i == 1 else f"{base}-{i}"
        if not taken(name) and name not in busy:
            return name
    return base


def taken(name: str) -> str | None:
    """Why `name` cannot be the repaired model's name (None: it can)."""
    if not NAME.match(name):
        return (
            f"The name {md_text(name)!r} is not a plain name: use letters, digits, '.', '_' "
            "or '-', up to 64."
        )
    for n in (name, f"{name}-random", f"{name}-no-validity"):
        if zoo.is_bundled(n) or (zoo.user_models_dir() / n).exists():
            return f"A model named {md_text(n)} exists already: choose another name."
    return None


def progress(log: str) -> tuple[float, str]:
    """How far the repair is (0 to 1) and its latest step, read from its log."""
    lines = [x.strip() for x in log.splitlines() if x.strip()]
    epochs = [re.search(r"^(\S+): epoch (\d+)/(\d+)", x) for x in lines]
    epochs = [m for m in epochs if m]
    done = 0.05 if lines else 0.0
    if epochs:
        arms = list(dict.fromkeys(m.group(1) for m in epochs))
        last = epochs[-1]
        total = 3 * int(last.group(3))  # the repair and its two controls
        done = 0.05 + 0.6 * ((len(arms) - 1) * int(last.group(3)) + int(last.group(2))) / total
    measured = sum(x.startswith(tuple(ARMS)) and "held-out" in x for x in lines)
    if measured:
        done = 0.65 + 0.35 * measured / 4
    last = lines[-1].replace("fresh campaign", "new campaign") if lines else "starting…"
    return min(done, 1.0), last


def table(rep: dict[str, Any]) -> pd.DataFrame:
    """The before/after table: the classifier, the repair and each control, in words;
    what tells them apart first, what was added and their names after."""
    added = rep["counts"]["added_per_arm"]
    rows = []
    for r in rep["rows"]:
        row = {"model": ARMS.get(r["model"], r["model"])}
        for key, head in COLUMNS.items():
            v = added.get(r["model"]) if key == "images_added" else r.get(key)
            if v is None:
                row[head] = "–"
            elif key == "fresh_misclassified_pct":
                row[head] = f"{v:.1f}%"
            elif key == "fresh_iterations_icst":
                row[head] = f"{v:.1f}"
            elif key == "images_added":
                row[head] = str(v)
            else:
                row[head] = f"{100 * v:.2f}%"
        row["name"] = r["name"]
        rows.append(row)
    out = pd.DataFrame(rows)
    return out.loc[:, (out != "–").any()]  # no column of dashes (no new campaign ran)


def show_report(rep: dict[str, Any]) -> None:
    c = rep["counts"]
    said = filter_words(rep["lineage"])
    st.markdown(
        repair_note(rep["model"], rep["parent"], rep["lineage"])
        + (f", passed by {md_text(said)}." if said else ".")
    )
    st.dataframe(table(rep), hide_index=True, width="stretch")
    st.caption(
        f"Held-out: {c['evaluation_images']} test images that no model trained on. The two "
        "controls add as many images as the repair: real held-out images, or the same "
        "source's failures without the validity filter. New campaign: the same campaign "
        "with another random seed, against each model."
    )
    rows = {r["model"]: r for r in rep["rows"]}
    a, b = (rows.get(k, {}).get("fresh_campaign") for k in ("before", "repair"))
    left, right = st.columns(2)
    left.page_link(
        "../pages/models.py",
        label=f"{rep['model']} under Models, with its lineage",
        query_params={"model": rep["model"]},
    )
    if a and b:
        right.page_link(
            "../pages/compare.py",
            label="Compare the new campaigns (before / repaired)",
            query_params={"id": [a, b]},
        )


def settings(
    store: Any,
    home: Path,
    source: str,
    dataset: str,
    base: list[str],
    classifiers: list[str],
    default: str,
    template: dict[str, Any] | None,
    validator: bool,
    prefer: tuple[str, ...],
) -> None:
    """The settings and Launch; each setting refused as it is chosen. A fragment: a
    change reruns these settings, not the whole page."""
    key = source.split()[1]
    args = list(base)
    if validator:
        args += ["--validator", form.validator_choice(store, key, dataset, prefer)]
    a, b = st.columns(2)
    clf = a.selectbox(
        "Classifier to repair",
        classifiers,
        index=classifiers.index(default) if default in classifiers else 0,
        key=f"repair-classifier-{key}",
    )
    # Keyed per classifier: the proposed name follows the classifier chosen. After a
    # Launch it moves on to the next free name (set before the widget exists, as
    # Streamlit requires), so the name just used does not read "taken" beside its report.
    name_key = f"repair-name-{key}-{clf}"
    if st.session_state.pop(f"repair-launched-{key}", False) or name_key not in st.session_state:
        st.session_state[name_key] = free_name(f"{clf}-repair-{key}", busy(home, source))
    name = b.text_input(form.LABELS["name"], key=name_key).strip()
    values = {"classifier": clf, "name": name, **form.training(key), **form.fresh(key, template)}
    said = form.problems(values)
    if why := taken(name):
        said.insert(0, why)
    for line in said:
        st.error(line)
    if st.button("Launch repair", disabled=bool(said), key=f"repair-launch-{key}") and not said:
        start(home, source, name, args + form.arguments(values, template))
        st.session_state[f"repair-launched-{key}"] = True
        st.rerun()  # the whole page: the section then watches the new repair


def section(
    store: Any,
    home: Path,
    source: str,
    dataset: str,
    default: str,
    base: list[str],
    refusal: str | None = None,
    validator: bool = False,
    prefer: tuple[str, ...] = (),
    template: dict[str, Any] | None = None,
) -> None:
    """The Repair section for `source` ("campaign ID" or "study ID"): settings and Launch,
    then the newest repair of it: its progress, or its refusal, or its report.

    base: the command's source options; refusal: why it cannot be repaired, known now;
    validator: ask which validity filter passes the failures (a campaign's); prefer: the
    filters offered first (the campaign's own, then ssim-nearest, the one measured);
    template: the config of the campaign the new campaigns repeat (None: none runs)."""
    st.subheader("Repair")
    st.caption(
        f"Fine-tune a copy of a classifier on the validated failures of this {source.split()[0]}, "
        "beside two controls with as many images, and measure all of them before and after."
    )
    if refusal:
        st.info(refusal)
        return
    classifiers = [
        c["name"]
        for c in zoo.list_cards()
        if c["kind"] == "classifier" and c["dataset"] == dataset and "architecture" in c
    ]
    if not classifiers:
        st.info(f"No {dataset} classifier that repair can fine-tune (a zoo architecture).")
        return
    # The settings (a dozen fields, the calibrated thresholds read) only when asked for:
    # built at every run, they were a sixth of a finished campaign's page.
    if st.toggle("Set up a repair", key=f"repair:open:{source}"):
        st.fragment(settings)(
            store, home, source, dataset, base, classifiers, default, template, validator, prefer
        )
    if name := latest(home, source):
        st.markdown(f"**The newest repair of this {source.split()[0]}**")
        watch(home, source, name)


def watch(home: Path, source: str, name: str) -> None:
    """The newest repair: live while its process runs, then its report or its refusal."""
    live = report(name) is None and running(home, source, name)

    @st.fragment(run_every=2 if live else None)
    def panel() -> None:
        log_file = log_path(home, source, name)
        log = log_file.read_text() if log_file.is_file() else ""
        rep, now = report(name), running(home, source, name)
        if live and (rep is not None or not now):
            st.rerun()  # the whole page, whose panel then stops polling
        if rep is not None:
            show_report(rep)
        elif now:
            done, line = progress(log)
            st.progress(done, text=f"Repairing into {md_text(name)}: {md_text(line)}")
        else:
            why = form.in_words(failure(log)) or "it ended without a word (see its log)"
            st.error(f"The repair into {md_text(name)} stopped: {why}")
            with st.expander("Its log"):
                st.code(log[-4000:])

    panel()


#: Study items that show a searched image (engine/repair/failures.py: SEARCHED).
SEARCHED = ("result", "imported", "triggering")


def campaign_repair(store: Any, home: Path, c: dict[str, Any]) -> None:
    """The Campaign page's section: a finished campaign, its failures passed by a filter."""
    if c["status"] != "finished" or c.get("kind") == "imported":
        return
    found = int(sc.summary(store, c["id"]).get("misclassified") or 0)
    section(
        store,
        home,
        f"campaign {c['id']}",
        c["dataset"],
        c["classifier"],
        ["--from-campaign", c["id"]],
        refusal=None if found else "This campaign found no failure: there is nothing to repair.",
        validator=True,
        prefer=tuple((c.get("config") or {}).get("validators") or ()),
        template=c.get("config"),
    )


def study_repair(store: Any, home: Path, sid: str, study: dict[str, Any], v: pd.DataFrame) -> None:
    """The Validity studies page's section: the failures people judged valid and
    label-preserving; refused in one line while no searched image has a verdict."""
    items = v[v["kind"].isin(SEARCHED) & v["expected"].notna()] if len(v) else v
    judged = items["validity"].map(lambda x: x is not None and x == x) if len(items) else items
    refusal = None
    if not len(items) or not bool(judged.any()):
        refusal = (
            "No image of this study has a verdict yet: label them on the Label page "
            "(or settle them under Adjudication), then repair."
        )
    camps = items["campaign_id"].dropna().unique().tolist() if len(items) else []
    first = sc.campaign(store, str(camps[0])) if camps else None
    default = first["classifier"] if first else ""
    section(
        store,
        home,
        f"study {sid}",
        study["dataset"],
        default,
        ["--from-study", sid],
        refusal,
        template=first["config"] if first else None,
    )
