"""A running campaign's progress as a fraction and an estimate of the time left.

The search advances all seeds together one generation at a time, so the share of the
generation budget done is the honest measure. The time left counts the generations left
at the cost of one now: each evaluates the seeds still searching, so generations done while
more seeds searched count for less; seeds that stop early (their first misclassification)
can only end the campaign sooner, so the estimate is an upper bound. Strategies without a
generation budget fall back to the share of seeds done.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.data import fragment
from dashboard.form_check import duration
from dashboard.launch import failure, launch_log
from dashboard.so_far import FAILING
from engine.api import startup
from store import Store, liveness
from store import campaigns as sc


def generation_budget(config: dict[str, Any] | None) -> int | None:
    """The campaign's generation budget from its stored config, or None."""
    g = ((config or {}).get("strategy_params") or {}).get("generations")
    return int(g) if g else None


def campaign_progress(
    campaign: dict[str, Any],
    progress: dict[str, Any],
    now: datetime | None = None,
    replay: tuple[float, int, int, int] | tuple[float, int, int] | None = None,
) -> tuple[float, str]:
    """(fraction done in [0, 1], one line: where it is and about how long is left).
    `replay`: a resumed campaign's report (engine/campaign/startup.py), whose clock starts at the
    resume, not at the first start hours before."""
    budget = generation_budget(campaign.get("config"))
    n, done = int(progress.get("n_seeds") or 0), int(progress.get("seeds_done") or 0)
    gen = int(progress.get("generation") or 0)
    # A seed the classifier got wrong is never searched: "10 of 10 seeds done" with one
    # of them never searched read as ten searches finished.
    skipped = int(progress.get("non_viable") or 0)
    viable, done = n - skipped, done - skipped
    seeds = done / viable if viable > 0 else 0.0
    frac = max(seeds, min(1.0, gen / budget)) if budget else seeds
    where = (
        f"generation {gen}"
        + (f" of {budget}" if budget else "")
        + (
            f" · {done} of {viable} viable seeds done ({skipped} not viable, never searched)"
            if skipped
            else f" · {done} of {n} seeds done"
        )
    )
    now = now or datetime.now(UTC).replace(tzinfo=None)  # the store's clock: naive UTC
    start, since = campaign["created_at"], "elapsed"
    resumed = replay and datetime.fromtimestamp(replay[0], UTC).replace(tzinfo=None)
    if resumed and resumed >= start:  # (not a report left by a deleted namesake)
        start, since = resumed, "since the resume"
    elapsed = (now - start).total_seconds()
    if gen == 0:
        return 0.0, f"drawing {n} seeds and checking that the classifier gets them right"
    if viable > 0 and done >= viable:
        # Every search is over: what is left is the close (metrics, a last checkpoint),
        # not the generations the estimate below would still count.
        return 1.0, f"{where} · {duration(max(elapsed, 0))} elapsed · writing the results…"
    # Each generation evaluates the seeds still searching: seeds that stopped at their
    # failure made the generations done dearer than those left (about 26 min left was
    # said where a minute remained). `scale`: the seeds searching now over the mean
    # searched per generation so far (generations rows / generations).
    rows = int(progress.get("generation_rows") or 0)
    scale = min(1.0, (viable - done) * gen / rows) if rows and viable > done else 1.0
    if since != "elapsed":
        # The resumed process runs the search again from its checkpoint's generation (0
        # without one, engine/campaign/resume.py), writing nothing until it passes the
        # stored generations: its own position since then, not the store's, says how
        # fast it goes.
        replayed, last = replay[1], replay[2]
        began = replay[3] if len(replay) > 3 else 0
        pos = replayed if replayed < last else gen
        if replayed < last:
            where += f" · replaying stored generation {replayed} of {last}"
        if not budget or pos <= began or elapsed <= 0:
            return frac, f"{where} · {duration(max(elapsed, 0))} {since}"
        left = scale * elapsed * max(budget - pos, 0) / (pos - began)
        return frac, f"{where} · {duration(elapsed)} {since}, at most about {duration(left)} left"
    if frac <= 0 or elapsed <= 0:
        return 0.0, f"{where} · estimating the time left…"
    # The time left from the generations done: seeds that finish early make the rest of
    # the generations cheaper, never dearer, so this is an upper bound. (The share of
    # seeds done is not: the seeds left may search to the last generation.)
    rate = min(1.0, gen / budget) if budget else frac
    saved = float(progress.get("saved_s") or 0.0)  # campaign time of its last stored row
    ahead = saved * scale * (1 - rate) / rate  # the generations left, from the last save
    if 0 < saved <= elapsed and ahead > elapsed - saved:
        # The rate of the rows stored, not of the time since: between two of the writer's
        # saves (10 s and more on a busy machine) the estimate then falls as time passes,
        # where elapsed / frac climbed until the next save. (A campaign behind its
        # estimate keeps the rule below.)
        left = ahead - (elapsed - saved)
        age = elapsed - saved
        stale = f" · saved {duration(age)} ago" if age >= STALE_S else ""
    else:
        left, stale = scale * elapsed * (1 - rate) / rate, ""
    return frac, (
        f"{where} · {duration(elapsed)} elapsed, at most about {duration(left)} left{stale}"
    )


def live_figures(
    seeds: pd.DataFrame, campaign: dict[str, Any], generation: int | None
) -> dict[str, Any]:
    """A running campaign's status figures (components.status_bar's summary) and seed
    counts (campaign_progress's seeds_done, non_viable) from the one frame of seed rows
    the gallery shows, FAILING seeds counted as failed: read apart, the tiles said 32
    misclassified beside a gallery of 17, a refresh behind. The means are the store's
    (store.campaigns.SUMMARY) over these rows."""
    viable = seeds[seeds["viable"].astype(bool)]
    failed = viable[viable["status"].isin(["misclassified", FAILING])]
    its = viable["iterations"].dropna()
    evals = viable["evaluations"].dropna()
    n_viable = len(viable)

    def mean(values: pd.Series) -> float | None:
        return float(values.mean()) if len(values) else None

    return {
        "status": campaign.get("status"),
        "criterion": (campaign.get("config") or {}).get("criterion"),
        "viable": n_viable,
        "misclassified": len(failed),
        "misclassified_pct": 100.0 * len(failed) / n_viable if n_viable else None,
        "interrupted": int(viable["status"].eq("interrupted").sum()),
        "iterations_icst": mean(its),
        "iterations_to_failure": mean(failed["iterations"].dropna()),
        "evaluations_per_seed": mean(evals),
        "generations": generation or None,
        "seeds_done": int((~seeds["status"].isin(["searching", FAILING])).sum()),
        "non_viable": int(seeds["status"].eq("non-viable").sum()),
    }


#: Rows older than this are said to be: the writer saves every 2 s on a quiet machine.
STALE_S = 5.0


def startup_progress(
    steps: list[tuple[float, str]], all_steps: tuple[str, ...], now: float
) -> tuple[float, str, float]:
    """A launched campaign before its first row: (fraction, a Markdown checklist of the
    engine's start-up steps with the seconds each took, seconds since the first)."""
    times = {s: t for t, s in steps}
    lines = []
    for i, step in enumerate(all_steps):
        if step not in times:
            lines.append(f"- ◻ {step}")
            continue
        end = times.get(all_steps[i + 1]) if i + 1 < len(all_steps) else None
        mark = "✅" if end else "⏳"
        lines.append(f"- {mark} {step} ({(end or now) - times[step]:.1f} s)")
    frac = len(times) / (len(all_steps) + 1)  # + 1: the campaign's row ends the start-up
    return frac, "\n".join(lines), (now - min(times.values())) if times else 0.0


#: Seconds between two looks while a launched campaign has shown nothing yet: its row, then
#: its first generation (issue 36: launch to first generation under 5 s). Each look is a
#: query or two; the live panel's 2 s refresh takes over once the chart is drawn.
FIRST_POLL_S = 0.5


@fragment(run_every=FIRST_POLL_S)
def wait_for_start(store: Store, home: Path, cid: str, steps: bool = True) -> None:
    """Until the campaign's row exists: the engine's start-up steps, checked off as its
    process reports them (engine/campaign/startup.py), then the whole page once the row is there
    or the process has written an error. `steps=False`: an id nothing is known to start,
    watched without a checklist that would say it is starting."""
    if sc.campaign(store, cid) is not None or "error" in launch_log(home, cid).lower():
        st.rerun()
    if not steps and not startup.read(home, cid):
        return
    frac, checklist, waited = startup_progress(startup.read(home, cid), startup.STEPS, time.time())
    st.progress(frac, text=f"start-up: {waited:.0f} s")
    st.markdown(checklist or "- ◻ starting the campaign's process")


@fragment(run_every=FIRST_POLL_S)
def wait_for_first_generation(store: Store, home: Path, cid: str) -> None:
    """A running campaign whose page showed no generation: the whole page again as soon
    as one is written, or its process is gone (the page then says why). The live panel
    alone looked every 2 s."""
    if sc.has_generation(store, cid) or not liveness.alive(home, cid):
        st.rerun()


@fragment(run_every=2.0)
def wait_for_first(store: Store) -> None:
    """Until the store holds a campaign (one started from the command line, say): then
    the whole page, which shows it. Without this the page said "no campaign yet" for
    good."""
    if not sc.list_campaigns(store).empty:
        st.rerun()


@fragment(run_every=1.0)
def wait_for_resume(store: Store, home: Path, cid: str, log_from: int) -> None:
    """After Resume: until the resumed process has marked the campaign running (then the
    whole page, live), or has written an error to its launch log past `log_from` (the
    log's length at the click: an earlier launch's lines do not count)."""
    c = sc.campaign(store, cid)
    if c is None or c["status"] not in liveness.RESUMABLE:
        st.session_state.pop(f"resume:{cid}", None)
        st.rerun(scope="app")
    new = launch_log(home, cid)[log_from:]
    if "error" in new.lower():
        st.session_state.pop(f"resume:{cid}", None)
        st.error(f"The campaign did not resume: {failure(new)}")
        with st.expander("Its log"):
            st.code(new[-4000:])
        return
    st.info("Resuming: starting the campaign's process…")


@fragment(run_every=3.0)
def watch_for_resume(store: Store, cid: str, status: str) -> None:
    """A stopped campaign's page, until something else resumes it (another tab, the
    command line): then the whole page, live. A second tab said "crashed" for good."""
    c = sc.campaign(store, cid)
    if c is None or c["status"] != status:
        st.rerun(scope="app")
