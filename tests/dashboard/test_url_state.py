"""dashboard/url_state.url_widget with `follow`: a choice still at a default that follows
the page (a running campaign's gallery status) stays out of the URL, so that a link made
while the campaign ran does not pin that default once it has moved on."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def script() -> None:
    import streamlit as st

    from dashboard.url_state import url_widget

    ss = st.session_state
    many = ss.get("many", True)
    default = ss["default"] if many else ss["default"][0]
    url_widget(
        st.multiselect if many else st.selectbox,
        "Show",
        "shown",
        ss["options"],
        default,
        many=many,
        follow=True,
    )


def opened(options: list[str], default: list[str], many: bool = True, **query) -> AppTest:
    at = AppTest.from_function(script)
    at.session_state["options"], at.session_state["default"] = options, default
    at.session_state["many"] = many
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def widget(at: AppTest):
    return at.multiselect[0] if at.session_state["many"] else at.selectbox[0]


def test_a_followed_default_is_not_written_into_the_url():
    """The live gallery wrote its default `searching` into the URL; the link, opened once
    the campaign finished, still pinned `searching`."""
    at = opened(["searching", "misclassified"], ["searching"])
    assert widget(at).value == ["searching"]
    assert "shown" not in at.query_params
    # The campaign finishes: the default moves on, and the link still holds no status.
    at.session_state["options"] = ["misclassified", "survived"]
    at.session_state["default"] = ["misclassified", "survived"]
    at.run()
    assert widget(at).value == ["misclassified", "survived"]
    assert "shown" not in at.query_params and not at.exception


def test_a_chosen_value_stays_in_the_url_and_leaves_it_back_at_the_default():
    at = opened(["searching", "misclassified"], ["searching"])
    widget(at).set_value(["misclassified"]).run()
    assert at.query_params["shown"] in ("misclassified", ["misclassified"])
    at.session_state["default"] = ["misclassified", "searching"]  # the campaign moves on
    at.run()
    assert widget(at).value == ["misclassified"]  # the user's choice stays
    widget(at).set_value(["misclassified", "searching"]).run()  # back to the default
    assert "shown" not in at.query_params and not at.exception


def test_a_link_with_a_value_opens_it_and_keeps_it():
    at = opened(["searching", "misclassified"], ["searching"], shown="misclassified")
    assert widget(at).value == ["misclassified"]
    assert at.query_params["shown"] in ("misclassified", ["misclassified"])


def test_a_single_choice_at_its_followed_default_is_not_written_either():
    at = opened(["seed", "iterations"], ["seed"], many=False)
    assert widget(at).value == "seed" and "shown" not in at.query_params
    widget(at).set_value("iterations").run()
    assert at.query_params["shown"] in ("iterations", ["iterations"])
    widget(at).set_value("seed").run()
    assert "shown" not in at.query_params and not at.exception
