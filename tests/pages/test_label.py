"""AppTest of the Label page (pages/label.py): keys and buttons record the right answer,
undo, skip, blind; links, names and the store transactions a key costs."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.labelling.agreement import INVALID, UNSURE
from engine.labelling.validity import StudyConfig, create_study
from store import Store
from store import labels as ls

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")


def button(at, name: str):
    """The answer button `name` of the image on screen (its key also names the item)."""
    return next(b for b in at.button if b.key.split(":")[0] == name)


@pytest.fixture
def own_study(study, monkeypatch):
    """(home, a new study of the module's campaign, open(labeller)): tests that use up
    images do not take them from the others."""
    home, cid, _ = study
    sid = create_study(
        Store(home / "latentfuzz.duckdb"), home, StudyConfig(campaigns=[cid], gold_rate=0.2, k=2)
    )
    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    st.cache_resource.clear()

    def open_as(labeller: str) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=60).run()
        at.switch_page("../pages/label.py")
        at.query_params.update(study=sid, labeller=labeller)
        return at.run()

    return home, sid, open_as


def shown(at: AppTest, sid: str, who: str) -> int:
    return at.session_state[f"label:{sid}:{who}"]["item"]


def mine(home: Path, sid: str, who: str):
    j = ls.judgements(Store(home / "latentfuzz.duckdb"), sid)
    return j[j["labeller"] == who]


def test_name_is_asked_once_then_images_come(page, study):
    home, _, sid = study
    at = page(None)
    assert not at.exception
    at.text_input[0].input("ann")
    at.button[0].click().run()
    assert at.query_params["labeller"] == "ann"  # in the URL: a reload resumes
    assert at.subheader[0].value == "Which class is this?"
    assert len(at.get("image")) == 1


def test_every_answer_is_one_button_with_its_key(page):
    at = page("bea")
    labels = {b.key.split(":")[0]: (b.label, b.proto.shortcut) for b in at.button}
    for i in range(10):
        assert labels[f"class{i}"] == (str(i), str(i))
    assert labels["invalid"] == ("not a valid digit image", "x")
    assert labels["unsure"] == ("unsure", "u")
    assert labels["undo"] == ("undo last answer", "backspace")
    assert labels["skip"] == ("skip for now", "s")


def test_a_key_pressed_for_an_earlier_image_answers_nothing(own_study):
    # Keys pressed in quick succession reach the server from the buttons on screen when
    # they were pressed: the image before. They answered the next images unseen.
    home, sid, page = own_study
    at = page("fast")
    first = shown(at, sid, "fast")
    on_screen = {n: button(at, n) for n in ("class3", "class5", "skip")}
    on_screen["class3"].click().run()
    for name in ("class3", "class5", "skip"):  # the first image's buttons, pressed again
        on_screen[name].click().run()
    assert mine(home, sid, "fast")["item_id"].tolist() == [first]
    assert shown(at, sid, "fast") != first
    button(at, "class5").click().run()  # the image on screen: answered
    assert len(mine(home, sid, "fast")) == 2


def test_buttons_record_the_right_answer_undo_and_skip(page, study):
    home, _, sid = study
    at = page("cy")
    first = shown(at, sid, "cy")
    button(at, "class3").click().run()
    assert mine(home, sid, "cy")[["item_id", "answer", "position"]].values.tolist() == [
        [first, 3, 1]
    ]
    second = shown(at, sid, "cy")
    assert second != first
    button(at, "invalid").click().run()
    third = shown(at, sid, "cy")
    button(at, "unsure").click().run()
    got = mine(home, sid, "cy").set_index("item_id")["answer"].to_dict()
    assert got == {first: 3, second: INVALID, third: UNSURE}
    assert (mine(home, sid, "cy")["seconds"] >= 0).all()
    at.button(key="undo").click().run()
    assert shown(at, sid, "cy") == third  # the undone image is back on screen
    assert third not in set(mine(home, sid, "cy")["item_id"])
    button(at, "skip").click().run()
    assert shown(at, sid, "cy") not in (first, second, third)
    assert len(mine(home, sid, "cy")) == 2  # a skip is not an answer
    assert at.metric[0].value == "2"


def test_the_page_is_blind(page, study):
    home, cid, sid = study
    at = page("dee")
    store = Store(home / "latentfuzz.duckdb")
    item = ls.items(store, sid).set_index("item_id").loc[shown(at, sid, "dee")]
    texts = [
        e.value
        for kind in (
            "title",
            "subheader",
            "markdown",
            "caption",
            "info",
            "success",
            "warning",
            "error",
        )
        for e in at.get(kind)
    ]
    texts += [b.label for b in at.button] + [m.label for m in at.metric]
    page_text = " ".join(map(str, texts)).lower()
    for hidden in (
        cid,
        sid,
        "vae",
        "gan",
        "campaign",
        "generator",
        "predict",
        "fitness",
        "expected",
        "iteration",
        "seed",
        "gold",
        str(item.image),
    ):
        assert hidden.lower() not in page_text, hidden
    assert not at.dataframe and not at.get("vega_lite_chart")


def test_open_world_dataset_offers_a_different_object(tmp_path, monkeypatch):
    """An ImageNet-subset study: "a different real-world object" is one key (O) and is
    stored as OTHER (valid, not the expected class); a closed dataset has no such button."""
    import pandas as pd
    from PIL import Image

    from engine.labelling.agreement import OTHER

    home = tmp_path / "home"
    (home / "imgs").mkdir(parents=True)
    Image.new("RGB", (32, 32), (200, 80, 10)).save(home / "imgs" / "a.png")
    store = Store(home / "latentfuzz.duckdb")
    sid = "study-imagenet"
    ls.create_validity_study(
        store,
        {
            "id": sid,
            "name": "pizza",
            "dataset": "imagenet-pizza",
            "source": "campaigns",
            "k": 2,
            "rule": "icst",
            "seed": 0,
            "resamples": 100,
        },
        pd.DataFrame(
            {"item_id": [0], "kind": ["result"], "image": ["imgs/a.png"], "expected": [0]}
        ),
    )
    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    st.cache_resource.clear()
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("../pages/label.py")
    at.query_params["study"] = sid
    at.query_params["labeller"] = "dee"
    at.run()
    assert not at.exception
    labels = {b.key.split(":")[0]: (b.label, b.proto.shortcut) for b in at.button}
    assert labels["other"] == ("a different real-world object", "o")
    assert labels["invalid"] == ("not a valid real-world object image", "x")
    assert labels["class0"][0] == "pizza"
    button(at, "other").click().run()
    assert mine(home, sid, "dee")["answer"].tolist() == [OTHER]


def test_closed_dataset_has_no_other_class_button(page):
    assert "other" not in {b.key for b in page("eve").button}


def test_a_key_costs_one_store_transaction_and_shows_the_reserved_image(page, study, monkeypatch):
    """Issue 11, labelling under 300 ms: the next item is reserved for this labeller while
    the current one is shown, its image is read beforehand, and a key press (answer, next
    claim, progress) opens the store once, not once per query and page part."""
    home, cid, _ = study
    # A study of its own: the module's study is partly claimed by the other tests' labellers.
    sid = create_study(
        Store(home / "latentfuzz.duckdb"),
        home,
        StudyConfig(campaigns=[cid], gold_rate=0.5, seed_images=True, k=1, seed=9),
    )
    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    st.cache_resource.clear()
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("../pages/label.py")
    at.query_params["study"], at.query_params["labeller"] = sid, "fay"
    at.run()
    state = at.session_state[f"label:{sid}:fay"]
    first, upcoming = state["item"], state["upcoming"]
    assert upcoming is not None and upcoming != first
    assert upcoming in state["images"]  # prefetched
    claims = Store(home / "latentfuzz.duckdb").query(
        "SELECT item_id FROM label_claims WHERE study_id = ? AND labeller = 'fay'", [sid]
    )
    assert set(claims["item_id"]) == {first, upcoming}  # reserved: nobody else takes it

    opened = []
    real = Store._connect

    def counting(self, *a, **kw):
        opened.append(kw.get("read_only", a[0] if a else None))
        return real(self, *a, **kw)

    monkeypatch.setattr(Store, "_connect", counting)
    for n in range(1, 4):
        opened.clear()
        button(at, "class3").click().run()
        assert not at.exception
        assert shown(at, sid, "fay") == upcoming
        assert at.metric[0].value == str(n)
        assert len([o for o in opened if o is False]) == 1, opened  # one write per key
        upcoming = at.session_state[f"label:{sid}:fay"]["upcoming"]
    assert mine(home, sid, "fay")["position"].tolist() == [1, 2, 3]


def test_a_key_pressed_after_the_last_image_is_ignored(tmp_path, monkeypatch):
    """In the browser a quick second key can land on the answer buttons of the page drawn
    before "nothing left": it wrote an answer without an image (a NOT NULL traceback,
    then a stuck page). Here: a click on the last image's button, kept from before."""
    home = tmp_path / "home"
    cfg = parse_config({"seeds": 5, "seed": 1, "strategy_params": {"generations": 40}})
    cid = run_campaign(cfg, home).campaign_id
    store = Store(home / "latentfuzz.duckdb")
    sid = create_study(store, home, StudyConfig(campaigns=[cid], gold_rate=0, k=1, sample=2))
    monkeypatch.setenv("LATENTFUZZ_HOME", str(home))
    st.cache_resource.clear()
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("../pages/label.py")
    at.query_params.update(study=sid, labeller="dan")
    at.run()
    while shown(at, sid, "dan") is not None:
        key = button(at, "class3")
        key.click().run()
    assert "Nothing left" in at.success[0].value and len(mine(home, sid, "dan")) == 2
    key.click().run()
    assert not at.exception, at.exception


def test_a_link_to_an_unknown_study_says_so_and_labels_nothing(study, monkeypatch):
    """`label?study=nope&labeller=zed` opened the labelling screen of another study without
    a word: a labeller with a mistyped link labelled the wrong study."""
    from tests.helpers import page_opener

    home, _, sid = study
    open_page = page_opener(home, monkeypatch)
    at = open_page("studies.py", study="nope")
    assert not at.exception, at.exception
    assert any("nope" in w.value and "does not hold" in w.value for w in at.warning)
    before = len(ls.judgements(Store(home / "latentfuzz.duckdb"), sid))
    at = open_page("label.py", study="nope", labeller="zed")
    assert not at.exception, at.exception
    assert any("nope" in w.value and "does not hold" in w.value for w in at.warning)
    assert f"label:{sid}:zed" not in at.session_state  # nobody joined a study unasked
    # No answer can be given until a study is picked.
    assert [b.label for b in at.button] == ["Label this study"]
    assert len(ls.judgements(Store(home / "latentfuzz.duckdb"), sid)) == before
    chosen = at.selectbox[0].value
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert at.query_params["study"] in (chosen, [chosen])
    assert f"label:{chosen}:zed" in at.session_state  # now labelling the study picked


def test_the_labeller_is_kept_when_the_sidebar_leads_back_to_the_label_page(own_study):
    # The sidebar's link to Label carries the study only: the page asked the name again.
    home, sid, page = own_study
    at = page("gil")
    assert shown(at, sid, "gil") is not None
    at.switch_page("../pages/studies.py").run()
    at.switch_page("../pages/label.py")
    at.query_params.clear()
    at.query_params["study"] = sid
    at.run()
    assert not at.exception and not at.text_input
    assert at.query_params["labeller"] == "gil"
    assert at.subheader[0].value == "Which class is this?"


def test_nothing_left_says_how_many_answers_others_still_owe(own_study):
    home, sid, page = own_study
    at = page("hal")
    while shown(at, sid, "hal") is not None:
        button(at, "class1").click().run()
    # k=2 and no second labeller yet: every image still wants another answer.
    assert "answers are still missing: they need other labellers" in at.success[0].value


@pytest.mark.parametrize("name", ["   ", "x" * 81])
def test_a_blank_or_overlong_labeller_name_labels_nothing(own_study, name):
    home, sid, page = own_study
    at = page(name)  # by the link
    assert not at.exception
    assert any("cannot be used" in w.value for w in at.warning)
    assert at.text_input[0].label == "Your name" and "labeller" not in at.query_params
    at.text_input[0].input(name)  # and by the form
    next(b for b in at.button if b.label == "Start labelling").click().run()
    assert at.error and "labeller" not in at.query_params
    assert ls.judgements(Store(home / "latentfuzz.duckdb"), sid).empty


def test_a_bad_name_in_a_link_keeps_the_name_this_tab_labels_under(own_study):
    home, sid, page = own_study
    at = page("ivy")
    assert shown(at, sid, "ivy") is not None
    at.query_params["labeller"] = "   "  # a link edited by hand
    at.run()
    assert any("cannot be used" in w.value for w in at.warning)
    assert not at.text_input and at.query_params["labeller"] == "ivy"
    assert at.subheader[0].value == "Which class is this?"
