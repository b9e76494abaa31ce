"""A Stable Diffusion pipeline folder from elsewhere: every component, every symlink below
it and every file its subfolder configs name must lie inside it (or inside the hub cache
folder of a snapshot), and its declared sizes are bounded, all before diffusers reads it.
Each refusal is one line and leaves nothing in the home."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from engine.core import home as home_module
from engine.core.errors import LatentfuzzError
from engine.core.untrusted import UntrustedFileError
from engine.generators.sd import load_pipeline
from engine.models.sd_import import import_pipeline
from tests.engine.generators.test_sd_pipeline import tiny_pipeline


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tiny_pipeline(tmp_path_factory.mktemp("sd-gate") / "tiny-sd")


@pytest.fixture
def pipe(base: Path, tmp_path: Path, monkeypatch) -> Path:
    """A fresh copy of the pipeline to spoil, and a home for the import to write into."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setattr(home_module, "_current", home)
    return Path(shutil.copytree(base, tmp_path / "downloaded-sd"))


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file outside the pipeline folder, as /etc/hostname is."""
    path = tmp_path / "secret" / "hostname"
    path.parent.mkdir()
    path.write_text("victim-host\n")
    return path


def refused(folder: Path, match: str, kind: type = LatentfuzzError) -> str:
    with pytest.raises(kind, match=match) as e:
        import_pipeline(folder, "mnist", "a {class}", name="spoiled", measure_seeds=0)
    home = home_module._current
    assert not (home / "models").exists() or not list((home / "models").iterdir())
    assert "\n" not in str(e.value)
    return str(e.value)


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    path.write_text(json.dumps(change(data)))


def test_a_model_index_that_is_a_list_is_one_line(pipe: Path):
    (pipe / "model_index.json").write_text('[["diffusers", "UNet2DConditionModel"]]')
    refused(pipe, r"model_index.json holds a JSON list, expected an object mapping each")


def test_a_model_index_nested_too_deep_is_one_line(pipe: Path):
    # A RecursionError traceback from json's decoder.
    (pipe / "model_index.json").write_text("[" * 200_000 + "]" * 200_000)
    refused(pipe, r"model_index.json: not readable JSON \(maximum recursion depth")


def test_a_huge_model_index_is_refused_before_it_is_read(pipe: Path):
    (pipe / "model_index.json").write_text("{" + " " * 2**21 + "}")
    refused(pipe, r"model_index.json is 2,097,154 bytes, expected at most 1,048,576")


def test_a_model_index_linked_outside_is_refused_before_it_is_read(pipe: Path, secret: Path):
    # What the link leads to decides the message: read first, the list was what was said.
    secret.write_text('[["diffusers", "UNet2DConditionModel"]]')
    (pipe / "model_index.json").unlink()
    (pipe / "model_index.json").symlink_to(secret)
    line = refused(pipe, r"symlink 'model_index.json' in .* lies outside", UntrustedFileError)
    assert "JSON list" not in line


@pytest.mark.parametrize("size", [1e9, [1e9, 1e9], float("inf"), -3, "big"])
def test_a_huge_sample_size_is_one_line_before_any_allocation(pipe: Path, size):
    edit_json(pipe / "unet" / "config.json", lambda c: {**c, "sample_size": size})
    refused(pipe, r"sample_size in .*unet/config.json is .*(at most 512|whole number)")


@pytest.mark.parametrize("kind", ["dotdot", "absolute"])
def test_a_component_named_outside_is_refused(pipe: Path, secret: Path, kind: str):
    name = {"dotdot": "../secret", "absolute": str(secret.parent)}[kind]
    edit_json(pipe / "model_index.json", lambda i: {**i, name: ["diffusers", "AutoencoderKL"]})
    msg = refused(pipe, r"component '.*secret' in .*model_index.json is ", UntrustedFileError)
    assert "lies outside" in msg


def test_a_component_folder_linked_outside_is_refused(pipe: Path, tmp_path: Path):
    elsewhere = Path(shutil.move(pipe / "vae", tmp_path / "elsewhere-vae"))
    os.symlink(elsewhere, pipe / "vae")
    refused(
        pipe,
        r"component 'vae' in .*model_index.json is 'vae', which lies outside",
        UntrustedFileError,
    )


@pytest.mark.parametrize("link", ["absolute", "dotdot"])
def test_a_weights_file_linked_outside_is_refused(pipe: Path, secret: Path, link: str):
    weights = pipe / "unet" / "diffusion_pytorch_model.safetensors"
    shutil.move(weights, secret.parent / "w.safetensors")
    target = secret.parent / "w.safetensors"
    os.symlink(target if link == "absolute" else os.path.relpath(target, weights.parent), weights)
    refused(pipe, r"symlink 'unet/diffusion_pytorch_model.safetensors' in ", UntrustedFileError)


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
def test_a_file_a_subfolder_config_names_outside_is_refused(pipe: Path, secret: Path, kind):
    """transformers before 5.x opened a tokenizer_config.json's vocab_file as written."""
    if kind == "symlink":
        os.symlink(secret, pipe / "tokenizer" / "vocab-link.json")
    value = {
        "dotdot": os.path.relpath(secret, Path.cwd()),
        "absolute": str(secret),
        "symlink": str(pipe / "tokenizer" / "vocab-link.json"),
    }[kind]
    config = pipe / "tokenizer" / "tokenizer_config.json"
    edit_json(config, lambda c: {**c, "vocab_file": value})
    refused(pipe, r"(vocab_file in tokenizer/tokenizer_config.json|symlink) ", UntrustedFileError)


def test_a_hub_snapshot_linking_into_its_blobs_loads(base: Path, tmp_path: Path):
    """The hub's cache keeps each file once in blobs/ and links it from the snapshot."""
    repo = tmp_path / "hub" / "models--someone--tiny-sd"
    snapshot = Path(shutil.copytree(base, repo / "snapshots" / "0123abc"))
    (repo / "blobs").mkdir()
    for i, f in enumerate(sorted(p for p in snapshot.rglob("*") if p.is_file())):
        blob = repo / "blobs" / f"blob{i}"
        shutil.move(f, blob)
        os.symlink(os.path.relpath(blob, f.parent), f)
    assert load_pipeline(snapshot).unet is not None
