"""A file that is not a classifier is refused from its bytes, in one line, before torch is
imported or anything is copied: an 18-byte text file took 8 s to refuse and was refused in
PyTorch's twelve lines about an "internal miniz error" (issue 36, walk finding 1)."""

from __future__ import annotations

import io
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from engine.core.errors import LatentfuzzError, ModelError
from engine.models import importing
from engine.models.importing import import_classifier
from engine.models.sniff import EXPECTED, classifier_format, sniff
from tests.engine.classifiers.test_onnx import Net, export
from tests.engine.models.test_importing import left_behind, user_home  # noqa: F401
from tests.helpers import CLI

TEXT = b"this is not a model"  # 19 bytes, as a user's stray notes file


def scripted() -> bytes:
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(nn.Sequential(nn.Flatten(), nn.Linear(784, 10))), buf)
    return buf.getvalue()


def saved(obj: object, zipped: bool = True) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf, _use_new_zipfile_serialization=zipped)
    return buf.getvalue()


def what(data: bytes) -> tuple[str | None, str]:
    return sniff(io.BytesIO(data), len(data))


def test_real_models_are_recognised_by_their_bytes(tmp_path: Path):
    assert what(scripted()) == ("torchscript", "a TorchScript archive")
    onnx_file = export(Net(), tmp_path / "m.onnx")
    assert what(onnx_file.read_bytes()) == ("onnx", "an ONNX model")
    # Weights in a file beside it: the model file is still a ModelProto with a graph.
    outside = export(Net(), tmp_path / "x.onnx", external=True)
    assert what(outside.read_bytes())[0] == "onnx"
    # The suffix does not decide: the bytes do.
    assert classifier_format(onnx_file.read_bytes(), "model.pt") == "onnx"


@pytest.mark.parametrize(
    "data, words",
    [
        (TEXT, "19 bytes of text"),
        ("héllo wörld ".encode() * 400, "5,600 bytes of text"),  # a cut character at 4 KB
        (b"<!DOCTYPE html><html><body>Sign in</body></html>", "an HTML page of 48 bytes"),
        (b"version https://git-lfs.github.com/spec/v1\noid sha256:ab\n", "a Git LFS pointer"),
        (b"\x00\xff" * 40, "80 bytes, neither a zip archive (TorchScript) nor an ONNX"),
        (b"PK\x03\x04" + b"\x00" * 60, "a damaged or cut zip archive"),
    ],
)
def test_what_a_wrong_file_is_said_in_words(data: bytes, words: str):
    fmt, said = what(data)
    assert fmt is None and said.startswith(words), said


def test_a_checkpoint_is_told_from_torchscript_with_the_fix():
    """torch.save(model.state_dict()) is what users upload first by mistake."""
    for data in (saved(nn.Linear(4, 2).state_dict()), saved({"w": 1}, zipped=False)):
        fmt, said = what(data)
        assert fmt is None and "torch.jit.script(model)" in said, said
    assert what(saved(nn.Linear(4, 2).state_dict()))[1].startswith("a torch.save checkpoint")
    assert what(pickle.dumps({"w": 1}, protocol=4))[1].startswith("a pickle")


def test_the_refusal_is_one_line_naming_the_file_as_the_user_knows_it():
    with pytest.raises(ModelError) as e:
        classifier_format(TEXT, "notamodel.pt")
    assert str(e.value) == (
        f"notamodel.pt is not a TorchScript or ONNX model (it is 19 bytes of text); {EXPECTED}"
    )
    assert EXPECTED == "expected a file written by torch.jit.save or torch.onnx.export"


def test_import_refuses_a_text_file_before_any_work(user_home: Path, tmp_path, monkeypatch):  # noqa: F811
    """No dataset read, nothing staged, no child process: the bytes were enough."""
    work = []
    monkeypatch.setattr(importing, "run_limited", lambda *a, **k: work.append("child"))
    monkeypatch.setattr(importing, "_dataset", lambda *a: work.append("dataset"))
    monkeypatch.setattr(importing, "staged", lambda *a: work.append("staged"))
    bad = tmp_path / "notamodel.pt"
    bad.write_bytes(TEXT)
    with pytest.raises(LatentfuzzError) as e:
        import_classifier(bad, "mnist")
    assert str(e.value).startswith(f"{bad} is not a TorchScript or ONNX model (it is 19 bytes")
    assert "\n" not in str(e.value)
    assert work == [] and left_behind(user_home) == []


def test_the_cli_refuses_it_in_one_line_without_loading_torch(env, tmp_path: Path):
    """`latentfuzz models import` of a text file: `error: ...`, exit 2, and torch never
    imported (it was: 4 to 8 s to refuse 18 bytes)."""
    bad = tmp_path / "notamodel.pt"
    bad.write_bytes(TEXT)
    # The CLI as installed, then a look at what the process imported, as it exits.
    probe = (
        "import atexit, sys; atexit.register(lambda: sys.stderr.write("
        "'\\ntorch imported: %s\\n' % ('torch' in sys.modules))); "
        "sys.argv = ['latentfuzz', *sys.argv[1:]]; from engine.entry import main; main()"
    )
    assert CLI[1:] == ["-m", "engine.entry"]
    p = subprocess.run(
        [sys.executable, "-c", probe, "models", "import", str(bad), "--dataset", "mnist"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    said, imported = p.stderr.strip().rsplit("\n", 1)
    assert p.returncode == 2, p.stderr
    assert said.strip() == (
        f"error: {bad} is not a TorchScript or ONNX model (it is 19 bytes of text); {EXPECTED}"
    )
    assert imported == "torch imported: False"
    assert not (Path(env["LATENTFUZZ_HOME"]) / "models").exists()


def test_a_decoder_that_is_no_torchscript_is_refused_before_any_work(
    user_home: Path,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    from engine.models.importing import import_generator

    work = []
    monkeypatch.setattr(importing, "run_limited", lambda *a, **k: work.append("child"))
    monkeypatch.setattr(importing, "staged", lambda *a: work.append("staged"))
    onnx_file = export(Net(), tmp_path / "decoder.pt")  # an ONNX file, named .pt
    for data, what in ((TEXT, "19 bytes of text"), (onnx_file.read_bytes(), "an ONNX model")):
        bad = tmp_path / "decoder.pt"
        bad.write_bytes(data)
        with pytest.raises(LatentfuzzError) as e:
            import_generator(bad, "mnist", (8,), 10)
        assert str(e.value).startswith(f"{bad} is not a TorchScript decoder (it is {what});")
        assert "\n" not in str(e.value)
    assert work == [] and left_behind(user_home) == []
