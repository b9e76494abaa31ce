"""New campaign offers the user's imported classifiers, and launches with one."""

from __future__ import annotations

from pathlib import Path

import yaml

from engine.core import home as home_module
from engine.models.importing import import_classifier
from tests.engine.classifiers.test_onnx import Net, export
from tests.helpers import page_opener


def test_new_campaign_offers_and_launches_an_imported_onnx_classifier(
    home: Path, tmp_path: Path, monkeypatch
):
    monkeypatch.setattr(home_module, "_current", home)
    import_classifier(export(Net(), tmp_path / "mine.onnx"), "mnist", "my-onnx")
    at = page_opener(home, monkeypatch)("new_campaign.py")
    choice = next(s for s in at.selectbox if s.label == "Classifier under test")
    assert {"mnist-convnet", "my-onnx (yours)"} <= set(choice.options)  # marked as yours
    choice.set_value("my-onnx").run()
    launched = []
    monkeypatch.setattr(
        "dashboard.launch.subprocess.Popen", lambda args, **k: launched.append(args)
    )
    at.number_input[0].set_value(2)  # seeds
    at.button[0].click().run()
    assert not at.exception and not at.error, at.error
    (args,) = launched  # the engine's checks loaded the ONNX model before launching
    cfg = yaml.safe_load(Path(args[args.index("--config") + 1]).read_text())
    assert cfg["classifier"] == "my-onnx"
