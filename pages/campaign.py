"""Campaign: live while it runs, then its status, convergence, gallery and per-seed detail."""

import time

import pandas as pd
import streamlit as st

from dashboard import launch, vega
from dashboard.annotations import annotation_editor
from dashboard.components import X_AXES, convergence_chart, load_image, status_bar, top2_chart
from dashboard.data import finished_zip, fragment, get_home, get_store, zip_problem
from dashboard.deleting import delete_panel
from dashboard.differential import differential_panel
from dashboard.escape import escape_panel, target_words
from dashboard.gallery import gallery, search_length, wording_of
from dashboard.launch import launch_log, stop
from dashboard.metrics import metrics_panel
from dashboard.progress import (
    campaign_progress,
    live_figures,
    wait_for_first,
    wait_for_first_generation,
    wait_for_resume,
    wait_for_start,
    watch_for_resume,
)
from dashboard.repair import campaign_repair
from dashboard.seed_table import seed_table
from dashboard.so_far import FAILING, csv_rows, said_as, with_failing_so_far
from dashboard.text import campaign_label, md_text
from dashboard.timeline import expected_gone, timeline, unknown_seed
from dashboard.url_state import url_unknown, url_widget
from engine.api import (
    DatasetError,
    LatentfuzzError,
    get_dataset,
    imported_note,
    startup,
    to_csv_bytes,
    zip_bytes,
)
from store import campaigns as sc
from store import history, liveness
from store.admin import rename_campaign
from store.errors import StoreBusy, StoreError
from store.failures import status_as

store, home = get_store(), get_home()
linked = [i for i in st.query_params.get_all("id") if i]  # `?id=` (emptied by hand): no id
cid = linked[0] if linked else None
# Every campaign only for the picker: a linked page read all 300 rows at every rerun.
campaigns = sc.list_campaigns(store) if cid is None else None
if len(linked) > 1:  # it showed the last one, and nothing said the others were dropped
    st.warning(
        f"The link names {len(linked)} campaigns ({md_text(', '.join(linked))}); this "
        "page shows the first. The Compare page shows several side by side."
    )
if cid is None and not campaigns.empty:  # (read above when no id is linked)
    names = dict(zip(campaigns["id"], campaigns["name"], strict=True))
    cid = st.selectbox(
        "Campaign", campaigns["id"], format_func=lambda i: campaign_label(i, names[i])
    )
if cid is None:
    st.info("No campaign yet: start one on the New campaign page.")
    wait_for_first(store)
    st.stop()


def read_campaign() -> dict | None:
    """The campaign row, `crashed` where its process is gone, also where the store could
    not be marked. The lock is looked at first: a campaign that closed between reading
    its row and looking would read as crashed."""
    alive = liveness.alive(home, cid)
    row = sc.campaign(store, cid)
    if row is not None and row["status"] == "running" and not alive:
        row["status"] = "crashed"
    return row


def empty_chart(
    x_axis: str = "generation", fitness: str = "margin", criterion: str | None = None
) -> None:
    """The convergence chart's frame before its first generation, said to be waiting. The
    browser loads the chart's code (24 scripts, 2 s on a loaded machine, issue 36) while
    the campaign starts, instead of after its first generation."""
    st.caption("No generation written yet: the chart fills in from the first one.")
    vega.chart(convergence_chart, sc.generations(store, cid), x_axis, fitness, criterion)


c = read_campaign()
if c is None:
    # Launched a moment ago: the engine process has not written its campaign row yet.
    log = launch_log(home, cid)
    st.title(f"Campaign {md_text(cid)}")
    if "error" in log.lower():
        st.error(f"The campaign did not start: {launch.failure(log)}")
        with st.expander("Its log"):
            st.code(log[-4000:])
        st.stop()
    known = launch.launched(home, cid) or bool(startup.read(home, cid))
    if known:
        st.info("Starting the campaign…")
    else:  # nothing launched it from here, and no process has reported start-up steps
        st.warning(
            f"No campaign with id {md_text(cid)}. If it was just started from a terminal, it "
            "shows here once its first row is written; otherwise see the Campaigns page."
        )
    wait_for_start(store, home, cid, steps=known)
    if known:  # its chart's frame, empty, while it starts (see `empty_chart`)
        empty_chart()
    st.stop()

st.title(f"Campaign {md_text(c['name'])}")
st.caption(
    f"{c['dataset']} · generator {c['generator']} · classifier {md_text(c['classifier'])}"
    f"{' vs ' + md_text(c['classifier_b']) if c.get('classifier_b') else ''} · "
    f"{c['strategy']} {c['preset'] or ''}{target_words(c)} · seed {c['random_seed']} · id {cid}"
)
annotation_editor(store, "campaign", cid)
try:
    dataset = get_dataset(c["dataset"])
    class_names, frame_width = dataset.class_names, dataset.shape[-1]
except DatasetError as e:  # a user's dataset removed or moved since
    st.error(f"Cannot show this: {e}")
    st.stop()


def live_now(status: str) -> bool:
    """Running, or finished with its process still writing the metrics (and a differential
    campaign's validity scores) under its lock: the page stays live until they land (it
    said "reload then" for good)."""
    return status == "running" or (status == "finished" and liveness.alive(home, cid))


running = live_now(c["status"])
imported = c.get("kind") == "imported"  # another tool's results: no generations rows
wording = wording_of(c)


def seeds_now() -> pd.DataFrame:
    """The per-seed rows written so far; with the generations each searched where the
    strategy searches its whole budget (the gallery says them, not "iterations")."""
    seeds = sc.seeds(store, cid)
    if wording.whole_budget:
        seeds = seeds.merge(history.generations_run(store, cid), on="seed_idx", how="left")
    return seeds


def downloads(seeds: pd.DataFrame, so_far: bool, shown: pd.DataFrame | None = None) -> None:
    """The CSV and the zip; while the campaign runs, what was written so far, said on
    the buttons, the zip made only when asked (it reads every image written), the CSV's
    rows as the gallery above shows them (`shown`: seeds failing so far said so)."""
    # As the progress line counts: a seed never searched (non-viable) is not one done.
    skipped = int(seeds["status"].eq("non-viable").sum())
    done = int((~seeds["status"].isin(["searching", "non-viable"])).sum())
    of = f"{len(seeds) - skipped} viable seeds done" if skipped else f"{len(seeds)} seeds"
    note = f" (so far: {done} of {of})" if so_far else ""
    a, b = st.columns(2)
    # Made on the click, not at each page run (a finished campaign's first view paid for
    # both; while it runs, every 2 s), from the rows this run shows.
    rows = seeds if shown is None else csv_rows(shown, list(seeds.columns), wording.criterion)
    a.download_button(
        f"Download CSV{note}", lambda: to_csv_bytes(rows), f"{cid}-seeds.csv", "text/csv"
    )
    if so_far:
        b.download_button(
            f"Download zip{note}", lambda: zip_so_far(rows), f"{cid}.zip", "application/zip"
        )
        st.caption(
            "The downloads hold what the campaign has written so far: every seed image, "
            "and the result images of the seeds done; seeds still searching have none yet. "
            "In the CSV (and the zip's), a seed whose best already fails is marked so "
            f"({said_as(FAILING, wording.criterion)}), with the prediction and the first "
            "failure of its best so far."
        )
        return
    # A missing image is said here, not after the click; the rest of the page shows.
    if problem := zip_problem(home, seeds):
        b.warning(f"No zip: {problem}. `latentfuzz doctor` lists what is missing.")
    else:
        b.download_button(
            "Download zip",
            lambda: finished_zip(store, home, cid, seeds),
            f"{cid}.zip",
            "application/zip",
        )


def zip_so_far(seeds: pd.DataFrame) -> bytes:
    """The zip of a running campaign, made on the button's click (in its own thread)
    from the rows the CSV beside it holds (its columns too): a result image is written a
    moment after its seed's row, so a missing one is waited for briefly before the error
    stands."""
    for wait in (0.5, 1.0, 2.0):
        try:
            return zip_bytes(store, home, cid, seeds)
        except LatentfuzzError:
            time.sleep(wait)
    return zip_bytes(store, home, cid, seeds)


def resume_offer(status: str) -> None:
    """A stopped campaign's way on, in view (it was inside "Manage this campaign")."""
    key = f"resume:{cid}"
    if key in st.session_state:
        wait_for_resume(store, home, cid, st.session_state[key])
        return
    left, right = st.columns([4, 1])
    # Its error, when it is the CLI's advice to resume, is said here once, beside the
    # button (the page said it twice: this warning and a red box below).
    why = liveness.without_advice(c["error"])
    left.warning(
        f"This campaign is {status}" + (f": {why}." if why else ".") + " Its figures cover "
        "the seeds finished so far. Resume continues it from its last written generation, "
        "to the results it would have had."
    )
    if right.button("Resume", type="primary"):
        st.session_state[key] = len(launch_log(home, cid))
        launch.resume(home, cid)
        st.rerun(scope="app")
    watch_for_resume(store, cid, status)


@fragment(run_every=2.0 if running else None)
def live() -> None:
    # Killed while this page watched it: it said "running", with Stop and a ticking
    # clock, until a reload, since only a whole page run marked dead campaigns. A page
    # run that found it done has just read (and reaped) it: no second read.
    if running:
        sc.reap(store)
    now = read_campaign() if running else c
    if now is None:  # deleted while this page was open
        st.warning(f"Campaign {cid} has been deleted.")
        st.page_link("../pages/campaigns.py", label="All campaigns")
        return
    left, right = st.columns([4, 1])
    left.markdown(f"**Status:** {now['status']}")
    if running:
        # One read of the seed rows for the progress line, the tiles and the gallery: read
        # apart, they disagreed by a refresh (32 misclassified in the tiles, 17 below).
        p = sc.progress(store, cid) if not imported else {}
        seeds = seeds_now()
        shown = seeds
        if wording.decided_live and not imported:
            shown = with_failing_so_far(
                seeds, history.failing_so_far(store, cid, wording.criterion)
            )
        figures = live_figures(shown, now, p.get("generation"))
    if now["status"] == "running":
        p = {**p, "seeds_done": figures["seeds_done"], "non_viable": figures["non_viable"]}
        frac, text = campaign_progress(now, p, replay=startup.read_replay(home, cid))
        left.progress(frac, text=text)
    if now["status"] == "finished" and running:
        left.caption("Finished; writing its metrics…")
    if now["status"] == "running" and right.button("Stop", type="secondary"):
        if stop(home, cid):
            st.toast("Stopping after the current generation…")
        else:
            st.toast("The campaign's process is gone; it is marked crashed.")
    if now["error"] and not (now["status"] in liveness.RESUMABLE and not imported):
        st.error(now["error"])  # (a resumable campaign's is in the Resume offer above)
    if running:
        so_far = now["status"] == "running"  # (finished: only its metrics are to come)
        status_bar(figures, int(now["n_seeds"]), wording.whole_budget, so_far=so_far)
    else:
        status_bar(sc.summary(store, cid), int(now["n_seeds"]), wording.whole_budget)
    if imported:
        st.info(imported_note(now))
        return
    gens = sc.generations(store, cid)
    x_axis = st.radio("x axis", list(X_AXES), horizontal=True, key="x_axis")
    cfg = now["config"] or {}
    fitness, criterion = cfg.get("fitness") or "margin", cfg.get("criterion")
    if gens.empty and not running:
        st.info("No generation written yet.")
    elif gens.empty:
        empty_chart(x_axis, fitness, criterion)
    else:
        vega.chart(convergence_chart, gens, x_axis, fitness, criterion, keep=not running)
    if running:
        # The failures found so far, with the finished view's cards and filters: they
        # are in the store one flush after they are found; seeds still searching whose
        # best already fails are among them ("misclassified so far").
        st.subheader("Seeds so far")
        gallery(shown, home, class_names, wording=wording)
        downloads(seeds, so_far=True, shown=shown)
    if running and not live_now(now["status"]):
        st.rerun()  # closed: render the final page once, without the timer


if c["status"] in liveness.RESUMABLE and not imported:
    resume_offer(c["status"])
no_generation_yet = running and not imported and not sc.has_generation(store, cid)
live()
if running:
    if no_generation_yet:  # polled faster than the live panel, until the chart has one
        wait_for_first_generation(store, home, cid)
    st.stop()


@fragment
def manage() -> None:
    """Rename, delete (the store-level functions do the work; store/admin.py)."""

    with st.expander("Manage this campaign"):
        new = st.text_input("Name", c["name"], key="rename")
        if new != c["name"] and st.button("Rename"):
            try:
                rename_campaign(store, cid, new)
            except (StoreError, StoreBusy) as e:  # an empty or too long name, a busy store
                st.error(f"Not renamed: {e}")
            else:
                st.rerun()
        delete_panel(store, home, cid, c["name"])  # confirms, then says what went


manage()

escape_panel(store, cid, class_names)
differential_panel(store, home, cid, class_names)
seeds = seeds_now()
# The open tab is in the URL (shareable) and only it renders: a closed tab costs nothing.
# (The metrics, a table and a histogram, were a tenth of the page's first load in a new
# browser: a tab of their own, the gallery under the chart.)
names = ["Gallery", *([] if imported else ["Metrics"]), "Seed detail", "Per-seed table"]
tabs = st.tabs(
    names,
    key="tab",
    bind="query-params",
    # A shared link to one seed opens on it.
    default="Seed detail" if "seed" in st.query_params else None,
)
tab_gallery, tab_seed, tab_table = tabs[0], tabs[-2], tabs[-1]
if tab_gallery.open:
    with tab_gallery:
        gallery(seeds, home, class_names, wording=wording)
if not imported and tabs[1].open:
    with tabs[1]:
        metrics_panel(store, cid, c["status"], c["strategy"])
if tab_seed.open:
    with tab_seed:
        searched = seeds[seeds["viable"]]
        if searched.empty:
            st.info("No viable seed.")
        else:
            options = searched["seed_idx"].tolist()
            # Shareable; a link to no seed shown here is said with its reason.
            s = url_widget(st.selectbox, "Seed", "seed", options, options[0], say_unknown=False)
            if given := url_unknown("seed"):
                st.warning(unknown_seed(given[0], seeds, s))
            row = searched.set_index("seed_idx").loc[s]
            # A seed stopped mid-search (an interrupted or crashed campaign) has no outcome yet.
            final = "–" if pd.isna(row.final_pred) else class_names[int(row.final_pred)]
            if pd.isna(row.iterations):
                length = "– iterations"
            elif wording.whole_budget:  # NSGA-II read "1 iterations" after 10 generations
                length = search_length(row, wording)
            else:
                length = f"{int(row.iterations)} iterations"
            st.markdown(
                f"expected **{class_names[int(row.seed_label)]}**, final prediction "
                f"**{final}**, {length}, status {status_as(row.status, wording.criterion)}"
            )
            g = sc.generations(store, cid, int(s))
            result = load_image(home, row.result_image, scale=4)
            if g.empty and result is not None:  # imported: the tool kept the result only
                st.image(result, caption="result")
            elif not g.empty:
                st.markdown("**Search history**: the best image at each improvement")
                imp = history.improvements(store, cid, int(s))
                timeline(home, g, imp, class_names, frame_width, key=f"timeline:{s}")
                vega.chart(top2_chart, g, class_names, int(row.seed_label))
                if note := expected_gone(g, int(row.seed_label), class_names):
                    st.caption(note)
if tab_table.open:
    with tab_table:
        st.dataframe(seed_table(seeds, class_names, wording), hide_index=True, width="stretch")

downloads(seeds, so_far=False)
campaign_repair(store, home, c)
