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


def _rows(store, table: str, rows: list[dict]) -> None:
    import pandas as pd

    frame = pd.DataFrame(rows)
    with store.write() as con:
        con.register("rows", frame)
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM rows")


def _gen(seed: int, g: int, fitness: float, pred: int, pred_b: int | None = None) -> dict:
    return {
        "campaign_id": "c",
        "seed_idx": seed,
        "generation": g,
        "best_fitness": fitness,
        "mean_fitness": fitness + 1,
        "best_pred": pred,
        "best_pred_b": pred_b,
        "top1_label": pred,
        "top1_prob": 0.6,
        "top2_label": 0,
        "top2_prob": 0.3,
        "step": 0.1,
        "evaluations": 25 * g,
        "elapsed_s": float(g),
        "image": f"campaigns/c/seed_{seed:04d}/improvements.png",
        "image_frame": g - 1,
    }


def _seed(seed: int, label: int, status: str = "searching", target: int | None = None) -> dict:
    return {
        "campaign_id": "c",
        "seed_idx": seed,
        "seed_label": label,
        "seed_pred": label,
        "seed_margin": 1.0,
        "viable": True,
        "status": status,
        "target": target,
        "seed_image": None,
        "result_image": None,
    }


def test_failing_so_far_applies_each_criterions_rule_to_the_best_of_each_row():
    """store.history.failing_so_far on crafted rows: a seed still searching fails so far
    from the first generation whose best fails the campaign's criterion (misclassified:
    not its class; targeted: its target; disagree: A and B differ), and is shown at its
    best failing row; seeds done are their own rows' business."""
    from store import Store, history

    store = Store()
    _rows(
        store,
        "seeds",
        [_seed(0, 3, target=4), _seed(1, 3, target=4), _seed(2, 3, "misclassified", 4)],
    )
    _rows(
        store,
        "generations",
        [
            _gen(0, 1, 2.0, 3),
            _gen(0, 2, -1.0, 4),  # reaches target 4 (and is misclassified)
            _gen(0, 3, -1.5, 4),
            _gen(1, 1, 1.0, 7),  # misclassified, not target 4
            _gen(1, 2, 0.5, 7),
            _gen(2, 1, -3.0, 4),  # done: its seed row tells
        ],
    )
    got = history.failing_so_far(store, "c", "targeted")
    assert got[["seed_idx", "first_failure", "generation", "best_pred"]].values.tolist() == [
        [0, 2, 3, 4]
    ]
    got = history.failing_so_far(store, "c", "misclassified")
    assert got[["seed_idx", "first_failure", "generation"]].values.tolist() == [
        [0, 2, 3],
        [1, 1, 2],
    ]
    assert got["image_frame"].tolist() == [2, 1]  # the best so far's frame in its strip
    assert got["first_frame"].tolist() == [1, 0]  # ... and its first failing one's
    store = Store()
    _rows(store, "seeds", [_seed(0, 3), _seed(1, 3)])
    _rows(store, "generations", [_gen(0, 1, -1.2, 3, 5), _gen(1, 1, -0.5, 3, 3)])
    got = history.failing_so_far(store, "c", "disagree")
    assert got[["seed_idx", "best_pred", "best_pred_b"]].values.tolist() == [[0, 3, 5]]
    assert history.failing_so_far(store, "c", "unknown").empty


def test_failures_so_far_are_told_only_where_the_fitness_goes_with_the_criterion():
    """A margin search under criterion `targeted` may hold a target-reaching individual
    that is not its best: its rows cannot tell, and its seeds stay "searching"."""
    from dashboard.so_far import decided_live

    assert decided_live({"fitness": "margin", "criterion": "misclassified"})
    assert decided_live({"fitness": "boundary", "criterion": "misclassified"})
    assert decided_live({"fitness": "escape", "criterion": "targeted"})
    assert decided_live({"fitness": "targeted", "criterion": "targeted"})
    assert decided_live({"fitness": "divergence", "criterion": "disagree"})
    assert not decided_live({"fitness": "margin", "criterion": "targeted"})
    assert not decided_live({"fitness": "divergence", "criterion": "misclassified"})
    assert not decided_live({"fitness": "margin", "criterion": "disagree"})
    assert not decided_live({})


def test_a_seed_failing_so_far_is_told_in_its_campaigns_words():
    import pandas as pd

    from dashboard.gallery import Wording, card_text
    from dashboard.so_far import FAILING, said_as, with_failing_so_far

    seeds = pd.DataFrame([_seed(0, 3, target=4), _seed(1, 3, target=4)]).assign(
        iterations=pd.NA, final_pred=pd.NA, final_pred_b=pd.NA, final_fitness=pd.NA
    )
    so_far = pd.DataFrame(
        [{**_gen(0, 3, -1.5, 4), "first_failure": 2, "first_frame": 1}],
    )
    out = with_failing_so_far(seeds, so_far)
    assert out["status"].tolist() == [FAILING, "searching"]
    r = next(out.itertuples())
    assert (r.iterations, r.final_pred, r.so_far_frame, r.so_far_generation) == (2, 4, 2, 3)
    names = tuple(str(c) for c in range(10))
    assert card_text(r, names, Wording("targeted")) == (
        "seed 0: expected **3**, reached target **4** since generation 2, still searching (so far)"
    )
    assert said_as(FAILING, "targeted") == "reached target so far"
    r = next(out.assign(target=None).itertuples())
    assert card_text(r, names, Wording()) == (
        "seed 0: expected **3**, predicted **4** since generation 2, still searching "
        "(misclassified so far)"
    )
    r = next(out.assign(target=None, final_pred_b=5).itertuples())
    assert card_text(r, names, Wording("disagree")).endswith(
        "A says **4**, B says **5** since generation 2, still searching (they disagree so far)"
    )
