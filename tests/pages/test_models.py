"""AppTest of the Models page (pages/models.py): the zoo, formatted cards with samples, and
a user's own models beside the bundled ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.core import home as home_module
from engine.models import zoo
from tests.helpers import page_opener
from tests.tiny_data import save_tiny_models


def test_models_page_lists_the_zoo(app):
    at = app("models.py")
    assert not at.exception
    names = at.dataframe[0].value["name"].tolist()
    assert {"mnist-convnet", "mnist-vae", "mnist-gan", "mnist-dm"} <= set(names)


def test_models_page_is_readable_with_samples_and_uploads(tmp_path, monkeypatch):
    """Formatted cards (no raw JSON, no None cells), sample images per generator, and the
    classifiers uploaded into the home listed."""
    home = tmp_path / "home"
    (home / "uploads").mkdir(parents=True)
    (home / "uploads" / "0123456789abcdef-mine.pt").write_bytes(b"x" * 10)
    at = page_opener(home, monkeypatch)("models.py")
    assert not at.exception, at.exception
    assert not at.get("image")  # samples on request: no model loaded for the page itself
    for t in at.toggle:
        t.set_value(True)
    at.run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert not table.isna().any().any()
    assert "None" not in table.astype(str).to_numpy()
    assert not at.get("code")  # no JSON dumps
    assert not [c.value for c in at.caption if c.value.startswith("No samples")]
    assert len(at.get("image")) >= 3  # one set of samples per generator
    assert at.dataframe[1].value["file"].tolist() == ["mine.pt"]
    assert any("trained with" in m.value for m in at.markdown)


def test_models_page_shows_user_models_beside_the_zoo(pets_app, tmp_path: Path, monkeypatch):
    # One bundled model is enough here, and drawing every zoo generator's samples would
    # take most of the test's time (test_models_page_lists_the_zoo shows the whole zoo).
    bundled = tmp_path / "bundled"
    bundled.mkdir()
    (bundled / "mnist-vae").symlink_to(zoo.models_dir() / "mnist-vae")
    monkeypatch.setattr(zoo, "models_dir", lambda: bundled)
    at = pets_app("models.py")
    assert not at.exception
    table = at.dataframe[0].value.set_index("name")
    assert table.loc["pets-vae", "source"] == "yours"
    assert table.loc["mnist-vae", "source"] == "bundled"
    assert table.loc["pets-convnet", "dataset"] == "pets"
    assert any(e.label.startswith("pets-vae · generator · pets · yours") for e in at.expander)
    pets = next(e for e in at.expander if e.label.startswith("pets-vae"))
    # (flex_container: the rename and delete row of a model of yours)
    assert [x.type for x in pets.children.values()] == ["markdown", "toggle", "flex_container"]
    at.toggle(key="samples-pets-vae").set_value(True).run()
    assert not at.exception, at.exception
    pets = next(e for e in at.expander if e.label.startswith("pets-vae"))
    assert [x.type for x in pets.children.values()][:3] == ["markdown", "toggle", "image"]  # 3-ch
    assert not any(c.value.startswith("No samples") for c in at.caption)


def test_a_model_added_on_models_is_measured_renamed_and_deleted(home: Path, monkeypatch):
    from tests.pages.test_new_campaign_models import tiny_classifier

    monkeypatch.setattr(home_module, "_current", home)  # restored: imports write here
    at = page_opener(home, monkeypatch)("models.py")
    at.file_uploader[0].set_value(("tiny_mnist.pt", tiny_classifier(), "application/octet-stream"))
    next(t for t in at.text_input if t.label == "Name").set_value("tiny")
    next(b for b in at.button if b.label == "Add classifier").click().run()
    assert not at.exception and not at.error, at.error
    assert at.success[0].value.startswith("Added tiny (test accuracy ")
    # An untrained net: added, with a warning in words (it was added without one).
    accuracy = json.loads((home / "models" / "tiny" / "card.json").read_text())["metrics"]
    assert accuracy["test_accuracy"] < 0.15  # the premise: chance is 10%
    assert [w.value for w in at.warning] == [
        f"{accuracy['test_accuracy']:.1%} on the mnist test split: about chance (10%); "
        "is it the right dataset or preprocessing?"
    ]
    row = at.dataframe[0].value.set_index("name").loc["tiny"]
    assert row["test accuracy"].endswith("%") and float(row["ms/image (1)"]) > 0
    at.text_input(key="rename-tiny").set_value("tiny-b")
    at.button(key="do-rename-tiny").click().run()
    assert at.success[0].value == "Renamed tiny to tiny-b."
    assert "tiny-b" in at.dataframe[0].value["name"].tolist()
    assert "tiny" not in at.dataframe[0].value["name"].tolist()
    at.button(key="delete-tiny-b").click().run()
    assert at.success[0].value == "Deleted tiny-b and its files."
    assert "tiny-b" not in at.dataframe[0].value["name"].tolist()
    assert sorted(p.name for p in (home / "models").iterdir()) == []


def test_a_model_a_campaign_uses_is_kept_and_the_page_says_why(home: Path, monkeypatch):
    from tests.engine.models.test_manage import campaign_naming

    monkeypatch.setattr(home_module, "_current", home)
    save_tiny_models(home / "models", "mnist", (1, 28, 28), 10, None, prefix="pets")
    campaign_naming(home, "pets-convnet", "my diff run")
    at = page_opener(home, monkeypatch)("models.py")
    assert all(not b.key.endswith("mnist-convnet") for b in at.button if b.key)  # bundled
    caption = next(c.value for c in at.caption if "uses it" in c.value)
    assert caption == (
        "1 campaign uses it: my diff run. Delete that campaign first, or keep the model."
    )
    assert at.button(key="delete-pets-convnet").disabled
    assert at.button(key="do-rename-pets-convnet").disabled
    assert not at.button(key="delete-pets-vae").disabled  # no campaign names this one
    at.text_input(key="rename-pets-vae").set_value("mnist-vae")
    at.button(key="do-rename-pets-vae").click().run()
    assert at.error[0].value == "A model named mnist-vae exists already: pick another name."
    assert (home / "models" / "pets-vae" / "card.json").is_file()


@pytest.mark.slow  # about 10 s: the decoder is measured in a child process (viability too)
def test_a_decoder_added_on_models_is_a_generator_the_form_offers(home: Path, monkeypatch):
    import io

    import torch

    from tests.engine.models.test_importing import Unconditional

    monkeypatch.setattr(home_module, "_current", home)
    torch.manual_seed(0)
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(Unconditional().eval()), buf)
    opener = page_opener(home, monkeypatch)
    at = opener("models.py")
    at.radio[0].set_value("generator").run()
    at.file_uploader[0].set_value(("my decoder.pt", buf.getvalue(), "application/octet-stream"))
    next(t for t in at.text_input if t.label == "Latent shape").set_value("8")
    next(b for b in at.button if b.label == "Add generator").click().run()
    assert not at.exception and not at.error, at.error
    assert at.success[0].value.startswith("Added my_decoder (viable seeds ")
    form = opener("new_campaign.py")
    generator = next(s for s in form.selectbox if s.label == "Generator")
    assert "my_decoder (yours)" in generator.options


def test_the_upload_form_is_empty_again_once_a_model_is_added(home: Path, monkeypatch):
    """The added file stayed in the uploader: a second click on Add classifier said the
    name was taken, as if the first had failed."""
    from tests.pages.test_new_campaign_models import tiny_classifier

    monkeypatch.setattr(home_module, "_current", home)  # restored: imports write here
    at = page_opener(home, monkeypatch)("models.py")
    at.file_uploader[0].set_value(("tiny_mnist.pt", tiny_classifier(), "application/octet-stream"))
    next(b for b in at.button if b.label == "Add classifier").click().run()
    assert not at.exception and not at.error, at.error
    assert at.success[0].value.startswith("Added tiny_mnist (")
    assert at.file_uploader[0].value is None
    assert next(t for t in at.text_input if t.label == "Name").value == ""


def test_a_name_s_rules_are_said_and_a_wrong_one_refused_as_typed(home: Path, monkeypatch):
    """ "tiny linear" was refused only at Add, and the field did not say the rules."""
    monkeypatch.setattr(home_module, "_current", home)
    at = page_opener(home, monkeypatch)("models.py")
    field = next(t for t in at.text_input if t.label == "Name")
    assert "letters, digits" in field.placeholder and "file's name" in field.placeholder
    assert "up to 64" in field.help and "no file suffix" in field.help
    field.set_value("tiny linear").run()  # typed, no click
    assert [e.value for e in at.error] == [
        "'tiny linear' is not a plain name: use letters, digits, '.', '_' or '-', up to 64, "
        "starting with a letter or digit, with no file suffix such as .pt"
    ]
    assert next(b for b in at.button if b.label == "Add classifier").disabled
    for taken, why in (
        ("mnist-convnet", "mnist-convnet is a bundled model's name: pick another name."),
        ("x.onnx", "'x.onnx' is not a plain name"),
    ):
        next(t for t in at.text_input if t.label == "Name").set_value(taken).run()
        assert at.error[0].value.startswith(why), at.error[0].value
    next(t for t in at.text_input if t.label == "Name").set_value("tiny-linear").run()
    assert not at.error and not next(b for b in at.button if b.label == "Add classifier").disabled


def test_a_model_in_use_is_said_plainly_for_one_or_many_campaigns():
    """It read "Used by 1 campaign (walk nsga), which name it: ..."."""
    from dashboard.models import in_use

    runs = [{"name": f"run {i}", "id": f"c{i}"} for i in range(5)]
    assert in_use(runs[:1]) == (
        "1 campaign uses it: run 0. Delete that campaign first, or keep the model."
    )
    assert in_use(runs[:2]) == (
        "2 campaigns use it: run 0, run 1. Delete those campaigns first, or keep the model."
    )
    assert in_use([{"name": None, "id": "c9"}, *runs]).startswith(
        "6 campaigns use it: c9, run 0, run 1 and 3 more. Delete those campaigns first"
    )
