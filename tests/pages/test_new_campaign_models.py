"""Models registered once (issue 36, point 4) and choices refused as they are made (point
6): an uploaded classifier becomes a model of the home, measured and listed on Models,
offered by name to later forms as classifier A or B, renamed and deleted there; an
incompatible choice says why in the form's words and Launch stays disabled."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import torch
import yaml
from streamlit.testing.v1 import AppTest
from torch import nn

from engine.core import home as home_module
from tests.helpers import page_opener

UPLOAD = "upload a TorchScript or ONNX file…"


def tiny_classifier() -> bytes:
    """A TorchScript MNIST classifier as a user would upload it: 784 -> 10, scripted."""
    torch.manual_seed(0)
    model = torch.jit.script(nn.Sequential(nn.Flatten(), nn.Linear(784, 10)).eval())
    buf = io.BytesIO()
    torch.jit.save(model, buf)
    return buf.getvalue()


def box(at: AppTest, label: str):
    return next(s for s in at.selectbox if s.label.startswith(label))


def launch_button(at: AppTest):
    return next(b for b in at.button if b.label == "Launch")


def said(at: AppTest) -> str:
    return " ".join(e.value.replace("\\", "") for e in at.error)


def every_text(at: AppTest) -> str:
    """What the page shows: its texts and the options of its pickers."""
    parts = [e.value for kind in ("markdown", "caption", "error", "success") for e in at.get(kind)]
    parts += [o for s in at.selectbox for o in s.options]
    return " ".join(str(p) for p in parts)


@pytest.fixture
def opener(home: Path, monkeypatch):
    monkeypatch.setattr(home_module, "_current", home)  # restored: imports write here
    return page_opener(home, monkeypatch)


def upload_in_form(opener, data: bytes, file_name: str = "tiny_mnist.pt") -> AppTest:
    """New campaign -> Classifier under test -> upload -> Add classifier."""
    at = opener("new_campaign.py")
    box(at, "Classifier under test").set_value(UPLOAD).run()
    assert launch_button(at).disabled  # nothing to test yet
    at.file_uploader[0].set_value((file_name, data, "application/octet-stream"))
    next(b for b in at.button if b.label == "Add classifier").click().run()
    assert not at.exception, at.exception
    return at


def test_an_upload_is_registered_once_and_is_classifier_b_of_a_later_form(
    opener, home: Path, monkeypatch
):
    at = upload_in_form(opener, tiny_classifier())
    assert not at.error, said(at)
    (ok,) = at.success
    assert ok.value.startswith("Added tiny_mnist to your models (test accuracy ")
    assert "ms per image" in ok.value
    assert box(at, "Classifier under test").value == "tiny_mnist"
    assert not (home / "uploads").exists()  # a model of the home, not a file in uploads
    assert not [p for p in home.iterdir() if p.name.startswith(".upload")]  # nor its copy

    # A second form session: no upload, the model offered by name as classifier B.
    again = opener("new_campaign.py")
    assert "tiny_mnist (yours)" in box(again, "Classifier under test").options
    box(again, "Generator").set_value("mnist-gan").run()
    box(again, "Search strategy").set_value("nsga2").run()
    # NSGA-II without a second classifier: said at the choice, in the form's words.
    reason = said(again)
    assert "two classifiers" in reason and "“Second classifier”" in reason, reason
    assert "--" not in reason and "classifier_b" not in reason
    assert launch_button(again).disabled
    second = box(again, "Second classifier")
    assert "tiny_mnist (yours)" in second.options
    second.set_value("tiny_mnist").run()
    assert not again.error, said(again)
    assert not launch_button(again).disabled
    assert str(home) not in every_text(again) and "uploads/" not in every_text(again)
    launched = []
    monkeypatch.setattr(
        "dashboard.launch.subprocess.Popen", lambda args, **k: launched.append(args)
    )
    launch_button(again).click().run()
    assert not again.exception and not again.error, said(again)
    (args,) = launched
    cfg = yaml.safe_load(Path(args[args.index("--config") + 1]).read_text())
    assert cfg["classifier_b"] == "tiny_mnist" and cfg["strategy"] == "nsga2"

    # Models lists it with what was measured when it was added.
    row = opener("models.py").dataframe[0].value.set_index("name").loc["tiny_mnist"]
    assert row["source"] == "yours" and row["kind"] == "classifier"
    assert row["test accuracy"].endswith("%") and float(row["ms/image (1)"]) > 0


def test_launch_says_why_it_is_off_while_no_upload_is_added(opener):
    """Launch was greyed out with no reason once "upload…" was picked."""
    at = opener("new_campaign.py")
    assert not [c for c in at.caption if c.value.startswith("Launch needs")]
    box(at, "Classifier under test").set_value(UPLOAD).run()
    assert launch_button(at).disabled
    (why,) = [c.value for c in at.caption if c.value.startswith("Launch needs")]
    assert why == "Launch needs a classifier: add the file above, or choose a model."
    box(at, "Classifier under test").set_value("mnist-convnet").run()
    assert not launch_button(at).disabled
    assert not [c for c in at.caption if c.value.startswith("Launch needs")]


def test_argus_on_a_gan_is_refused_when_chosen_in_words(opener):
    at = opener("new_campaign.py")
    box(at, "Generator").set_value("mnist-gan").run()
    box(at, "Search strategy").set_value("interpolate").run()
    reason = said(at)
    assert reason.startswith("These choices cannot go together: Strategy 'interpolate' needs")
    assert "encoder" in reason and "pick another generator or search strategy" in reason
    assert "--" not in reason
    assert launch_button(at).disabled
    box(at, "Generator").set_value("mnist-vae").run()
    assert not at.error and not launch_button(at).disabled


def test_a_launch_refusal_names_the_form_s_labels_not_config_fields(opener, monkeypatch):
    """An engine refusal at Launch (here the seed pool) is shown without CLI flags."""
    launched = []
    monkeypatch.setattr("dashboard.launch.subprocess.Popen", lambda *a, **k: launched.append(a))
    at = opener("new_campaign.py")
    next(r for r in at.radio if r.label == "Objective").set_value("targeted: reach one class").run()
    next(s for s in at.selectbox if s.label == "Class to reach").set_value("3")
    next(s for s in at.selectbox if s.label == "Seed class").set_value("3")
    launch_button(at).click().run()
    reason = said(at)
    assert reason.startswith("Cannot launch:") and "“Seed class”" in reason, reason
    assert "target_class" not in reason and "--" not in reason
    assert launched == []


def test_a_file_that_is_not_a_classifier_is_refused_and_leaves_nothing(
    opener, home: Path, monkeypatch
):
    """An 18-byte text file was refused after 8 s, in PyTorch's twelve lines: now from its
    bytes, before the file is copied or loaded (no child process), in one line."""
    from engine.models import importing

    loaded = []
    monkeypatch.setattr(importing, "run_limited", lambda *a, **k: loaded.append(a))
    at = upload_in_form(opener, b"not a model at all", "notamodel.pt")
    assert said(at) == (
        "notamodel.pt is not a TorchScript or ONNX model (it is 18 bytes of text); "
        "expected a file written by torch.jit.save or torch.onnx.export"
    )
    assert loaded == []
    assert box(at, "Classifier under test").value == UPLOAD
    assert not (home / "models").exists() or not list((home / "models").iterdir())
    assert [p.name for p in home.iterdir() if p.name.startswith(".")] == []
