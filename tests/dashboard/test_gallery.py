"""dashboard/gallery.py: its filters across reruns of a campaign that moves on (a resume):
filters the user left at their defaults follow the campaign; a filter the user set stays."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def script() -> None:
    import pandas as pd
    import streamlit as st

    from dashboard.gallery import gallery

    if st.session_state.get("hide"):  # another tab: the gallery is not drawn
        return
    rows = st.session_state["rows"]
    seeds = pd.DataFrame(
        {
            "seed_idx": range(len(rows)),
            "status": [s for s, _ in rows],
            "iterations": [i for _, i in rows],
            "seed_label": [3] * len(rows),
            "seed_pred": [3] * len(rows),
            "final_pred": [5] * len(rows),
            "seed_image": [None] * len(rows),
            "result_image": [None] * len(rows),
        }
    )
    wording = st.session_state.get("wording")
    gallery(seeds, st.session_state["home"], tuple(str(c) for c in range(10)), wording=wording)


INTERRUPTED = [("misclassified", 98), ("misclassified", 97), ("interrupted", 60)]


RESUMED = [
    ("misclassified", 98),
    ("misclassified", 97),
    ("misclassified", 250),
    ("survived", 250),
    ("non-viable", 0),
]


def run(at: AppTest, rows) -> AppTest:
    at.session_state["rows"] = rows
    return at.run()


def test_filters_left_at_their_defaults_follow_a_resumed_campaign(tmp_path):
    at = AppTest.from_function(script)
    at.session_state["home"] = tmp_path
    run(at, INTERRUPTED)
    assert at.multiselect[0].value == ["misclassified", "interrupted"]
    assert at.number_input[0].value == 98
    run(at, RESUMED)
    # Before: "misclassified" alone and at most 98 iterations, so 2 of the 4 searched
    # seeds were shown where a fresh visit shows all 4.
    assert at.multiselect[0].value == ["misclassified", "survived"]
    assert at.number_input[0].value == 250
    assert not at.exception


def test_filters_the_user_set_stay_when_the_campaign_moves_on(tmp_path):
    at = AppTest.from_function(script)
    at.session_state["home"] = tmp_path
    run(at, INTERRUPTED)
    at.multiselect[0].set_value(["interrupted"]).run()
    at.number_input[0].set_value(70).run()
    run(at, [*INTERRUPTED, ("misclassified", 120)])
    assert at.multiselect[0].value == ["interrupted"]
    assert at.number_input[0].value == 70
    at.session_state["hide"] = True  # another tab: the widgets' state is dropped
    at.run()
    at.session_state["hide"] = False
    at.run()
    assert at.number_input[0].value == 70  # it was reset to the maximum
    # Another campaign's smaller maximum: the box is not left above it.
    run(at, [("misclassified", 12)])
    assert at.number_input[0].value == 12
    assert not at.exception


def test_a_run_that_skips_the_gallery_does_not_turn_its_own_write_into_a_link(tmp_path):
    """Streamlit drops a widget's state after a run that does not draw it; the gallery's
    own earlier write to the URL then read as a link, kept "interrupted" and said the link
    matched nothing."""
    at = AppTest.from_function(script)
    at.session_state["home"] = tmp_path
    run(at, INTERRUPTED)
    at.session_state["hide"] = True
    at.run()
    at.session_state["hide"] = False
    run(at, RESUMED)
    assert at.multiselect[0].value == ["misclassified", "survived"]
    assert at.number_input[0].value == 250
    assert not at.warning and not at.exception


def test_a_value_lowered_before_a_resume_stays_through_the_runs_that_skip_the_gallery(
    tmp_path,
):
    """Lowered to 50 on the interrupted page, the box showed 0 after the resume (whose
    waiting runs do not draw the gallery) and no seed matched."""
    at = AppTest.from_function(script)
    at.session_state["home"] = tmp_path
    run(at, [*INTERRUPTED, ("misclassified", 30)])
    at.number_input[0].set_value(50).run()
    at.session_state["hide"] = True
    at.run()
    at.run()
    at.session_state["hide"] = False
    run(at, [*RESUMED, ("misclassified", 30)])
    assert at.number_input[0].value == 50
    assert not at.info  # "No seed matches these filters." (the box was at 0)
    assert not at.exception


def test_a_stale_status_link_is_answered_in_the_campaigns_words(tmp_path):
    from dashboard.gallery import Wording

    # The link a running differential campaign's page wrote (its seeds were searching),
    # opened once it finished: the note said "showing misclassified" beside a filter that
    # reads "A and B disagree".
    at = AppTest.from_function(script)
    at.session_state["home"] = tmp_path
    at.session_state["wording"] = Wording("disagree", whole_budget=True)
    at.query_params["gallery_status"] = "searching"
    run(at, [("misclassified", 1), ("non-viable", 0)])
    notes = [c.value for c in at.caption if c.value.startswith("⚠")]
    assert notes == [
        "⚠ The link gives Show = searching, which matches nothing here; showing A and B disagree."
    ]
