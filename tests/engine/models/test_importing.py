"""`latentfuzz models import` / `import-generator`: a user's files become models of their
home with a measured card, refusals leave nothing behind, and a campaign runs on them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from torch import nn

from engine.campaign.batching import item_bytes
from engine.core import home as home_module
from engine.core.errors import LatentfuzzError
from engine.core.files import sha256
from engine.models import zoo
from engine.models.importing import import_classifier, import_generator, parse_floats
from engine.models.measure import finish_generator_card
from engine.train.compress import compress_classifier
from engine.train.settings import TrainSettings
from tests.engine.classifiers.test_onnx import Net, export
from tests.engine.cli.test_cli import cli


class Decoder(nn.Module):
    """Latent 8 + a class label -> a 28x28 image in [-1, 1] (tanh), as a DCGAN makes."""

    def __init__(self, conditional: bool = True, side: int = 28) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.fc = nn.Linear(8, side * side)
        self.side = side

    def forward(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.fc(z + self.embed(y))).view(-1, 1, self.side, self.side)


class Unconditional(Decoder):
    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.fc(z.flatten(1))).view(-1, 1, self.side, self.side)


def script(module: nn.Module, path: Path) -> Path:
    torch.manual_seed(0)
    torch.jit.save(torch.jit.script(module.eval()), str(path))
    return path


@pytest.fixture
def user_home(home: Path, monkeypatch) -> Path:
    """In-process imports write under this home, as `--home` makes the CLI do."""
    monkeypatch.setattr(home_module, "_current", home)
    return home


def left_behind(home: Path) -> list[str]:
    root = home / "models"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def models_cli(args: list[str], home: Path) -> str:
    """`latentfuzz models ...` in this process (a CLI process costs seconds to start)."""
    from typer.testing import CliRunner

    from engine.cli.main import app

    result = CliRunner().invoke(app, ["models", *args, "--home", str(home)])
    if result.exception is not None:
        raise result.exception
    return " ".join(result.output.split())


def test_import_both_kinds_then_run_a_campaign_on_them(user_home: Path, env, tmp_path: Path):
    home = user_home
    onnx = export(Net(), tmp_path / "mine.onnx", external=True)
    line = models_cli(["import", str(onnx), "--dataset", "mnist", "--name", "my-onnx"], home)
    m = re.search(
        r"imported my-onnx \(onnx, with (\S+)\) for mnist: ([\d,]+) parameters, "
        r"test accuracy ([\d.]+) on 1000 images",
        line,
    )
    assert m, line
    card = json.loads((home / "models" / "my-onnx" / "card.json").read_text())
    assert card["format"] == "onnx" and card["dataset_fingerprint"]
    assert set(card["files"]) == {"mine.onnx", m[1]} and (home / "models/my-onnx" / m[1]).is_file()
    assert card["sha256"] == sha256(onnx)
    assert card["metrics"]["test_accuracy"] == float(m[3])
    assert card["parameters"] == int(m[2].replace(",", "")) > 0
    assert card["inference"]["ms_per_image_b25"] > 0

    dec = script(Decoder(), tmp_path / "decoder.pt")  # the name the model folder uses
    line = models_cli(
        [
            "import-generator",
            str(dec),
            "--dataset",
            "mnist",
            "--latent-shape",
            "8",
            "--classes",
            "10",
            "--conditional",
            "--output-range",
            "-1,1",
            "--name",
            "my-gen",
        ],
        home,
    )
    assert "imported my-gen (TorchScript decoder, conditional, latent (8,))" in line
    card = json.loads((home / "models" / "my-gen" / "card.json").read_text())
    low, high = card["latent_bounds"]
    assert low < 0 < high and card["step_presets"]["high"] == pytest.approx((high - low) * 1e-3)
    assert 0 <= card["metrics"]["viability"] <= 1 and card["metrics"]["viability_seeds"] == 1000
    assert card["sha256"] == sha256(dec) == sha256(home / "models/my-gen/decoder.pt")
    assert {"my-onnx", "my-gen"} <= {c["name"] for c in zoo.list_cards()}
    assert not zoo.is_bundled("my-onnx")

    out = cli(
        [
            "run",
            "--dataset",
            "mnist",
            "--generator",
            "my-gen",
            "--classifier",
            "my-onnx",
            "--seeds",
            "3",
            "--generations",
            "3",
            "--quiet",
        ],
        env,
    )
    assert re.search(r"campaign \S+ finished", out.stdout) and "of 3" in out.stdout


def test_a_folder_or_a_missing_file_names_both_formats(user_home: Path, tmp_path):
    """A folder read "does not exist; give the path of a .pt file" (ONNX is taken too)."""
    with pytest.raises(LatentfuzzError, match="is a folder; give the path of a TorchScript"):
        models_cli(["import", str(tmp_path), "--dataset", "mnist"], user_home)
    with pytest.raises(LatentfuzzError, match=r"does not exist.*\(\.pt\) or ONNX \(\.onnx\)"):
        models_cli(["import", str(tmp_path / "no.onnx"), "--dataset", "mnist"], user_home)
    assert left_behind(user_home) == []


def test_a_refused_import_writes_nothing(user_home: Path, tmp_path):
    fixed = export(Net(), tmp_path / "fixed.onnx", dynamic=False)
    with pytest.raises(LatentfuzzError, match="fixed.onnx was exported with a fixed batch of 2"):
        models_cli(["import", str(fixed), "--dataset", "mnist"], user_home)
    assert left_behind(user_home) == []


@pytest.mark.parametrize("suffix, kind", [(".pt", "TorchScript"), (".onnx", "ONNX")])
def test_an_empty_model_file_is_named_as_empty(user_home: Path, tmp_path, suffix, kind):
    # It gave the archive reader's words: "not a ZIP archive ... internal miniz error".
    empty = tmp_path / f"empty{suffix}"
    empty.write_bytes(b"")
    with pytest.raises(LatentfuzzError, match=rf"is empty \(0 bytes\); expected a {kind} file"):
        import_classifier(empty, "mnist")
    assert left_behind(user_home) == []


def test_names_bundled_taken_and_replaced(user_home: Path, tmp_path: Path):
    ts = tmp_path / "clf.pt"
    torch.jit.save(torch.jit.script(Net().eval()), str(ts))
    with pytest.raises(LatentfuzzError, match="'mnist-convnet' is a bundled model"):
        import_classifier(ts, "mnist", "mnist-convnet")
    with pytest.raises(LatentfuzzError, match="not a plain name"):
        import_classifier(ts, "mnist", "../escape")
    card = import_classifier(ts, "mnist")
    assert card["name"] == "clf" and card["format"] == "torchscript"
    assert zoo.load_classifier("clf", "mnist").name == "clf"
    with pytest.raises(LatentfuzzError, match="already have a model 'clf'.*--replace"):
        import_classifier(ts, "mnist")
    assert import_classifier(ts, "mnist", replace=True)["name"] == "clf"
    with pytest.raises(LatentfuzzError, match="clf is an imported torchscript file, not one"):
        compress_classifier("clf")  # pruning needs a zoo architecture
    assert left_behind(user_home) == ["clf"]
    # Training under its name replaced its card without a word and left clf.pt behind.
    from engine.train.classifier import train_classifier

    with pytest.raises(
        LatentfuzzError,
        match="model name 'clf' is your imported torchscript classifier .*; pick another --name",
    ):
        train_classifier(TrainSettings("mnist", epochs=1, batch_size=64, name="clf"))
    assert zoo.load_card("clf")["format"] == "torchscript"


@pytest.mark.parametrize(
    ("module", "options", "message"),
    [
        (Decoder(), {"conditional": False}, r"decoder failed on \(z\).*add --conditional"),
        (Decoder(), {"latent_shape": (4, 2)}, r"failed on \(z, labels\).*real --latent-shape"),
        (Decoder(side=32), {}, r"made \(3, 1, 32, 32\) for 3 latents, expected .*\(3, 1, 28"),
        (Decoder(), {"output_range": (0.0, 1.0)}, r"span \[-.*outside --output-range 0,1"),
        (Unconditional(), {"conditional": False, "classes": 7}, r"--classes 7, but .* has 10"),
    ],
)
def test_bad_decoders_are_refused(user_home: Path, tmp_path, module, options, message):
    kwargs = {
        "latent_shape": (8,),
        "classes": 10,
        "conditional": True,
        "output_range": (-1.0, 1.0),
        **options,
    }
    with pytest.raises(LatentfuzzError, match=message):
        import_generator(script(module, tmp_path / "d.pt"), "mnist", **kwargs)
    assert left_behind(user_home) == []


def test_unconditional_decoder_with_a_2d_latent_imports_decodes_and_remeasures(
    user_home: Path, tmp_path: Path
):
    card = import_generator(script(Unconditional(), tmp_path / "u.pt"), "mnist", (2, 4), 10)
    gen = zoo.load_generator(card["name"])
    assert not gen.conditional and not gen.has_encoder and gen.latent_shape == (2, 4)
    seeds = gen.draw_seeds(4, torch.zeros(0), torch.zeros(0), torch.Generator().manual_seed(0))
    assert seeds.latents.shape == (4, 2, 4) and (seeds.source_index == -1).all()
    x = gen.decode(seeds.latents)
    assert x.shape == (4, 1, 28, 28) and 0 <= float(x.min()) <= float(x.max()) <= 1
    # The campaign's batch-size sweep hooks modules; the scripted decoder takes none.
    assert item_bytes(lambda n: gen.decode(seeds.latents[:n]), [gen], 4 * 792) == 64 * 4 * 792

    # `latentfuzz models measure u` rewrites the user's card, not one in the bundled zoo.
    path = user_home / "models" / "u" / "card.json"
    path.write_text(json.dumps({**card, "inference": {}}))
    assert finish_generator_card("u", "mnist", None, None)["inference"]
    assert json.loads(path.read_text())["inference"] and not (zoo.models_dir() / "u").exists()


def test_a_failure_while_measuring_leaves_no_folder(user_home: Path, tmp_path, monkeypatch):
    ts = tmp_path / "clf.pt"
    torch.jit.save(torch.jit.script(Net().eval()), str(ts))
    import_classifier(ts, "mnist")

    def broken(*args, **kwargs):
        raise RuntimeError("interrupted")

    monkeypatch.setattr("engine.models.importing.run_limited", broken)
    with pytest.raises(RuntimeError, match="interrupted"):
        import_classifier(ts, "mnist", replace=True)
    assert left_behind(user_home) == ["clf"]  # the model it was to replace is kept
    assert zoo.load_classifier("clf", "mnist").name == "clf"


def test_shapes_and_ranges_on_the_command_line():
    assert parse_floats("4,8,8", "--latent-shape") == [4, 8, 8]
    assert parse_floats("4x8x8", "--latent-shape") == [4, 8, 8]
    assert parse_floats("-1,1", "--output-range", 2) == [-1, 1]
    with pytest.raises(LatentfuzzError, match=r"--output-range '-1' is not 2 numbers"):
        parse_floats("-1", "--output-range", 2)
    with pytest.raises(LatentfuzzError, match=r"--latent-shape 'eight' is not numbers"):
        parse_floats("eight", "--latent-shape")


class ThreeChannels(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x).flatten(1)[:, :10]


def test_a_torchscript_failure_says_why_not_only_that_it_failed(user_home: Path, tmp_path):
    """Every such file read "(RuntimeError: The following operation failed in the
    TorchScript interpreter.)": the reason is on the error's last line."""
    ts = script(ThreeChannels().eval(), tmp_path / "rgb.pt")
    says = r"to have 3 channels, but got 1 channels instead\); the classifier must take that"
    with pytest.raises(LatentfuzzError, match=says):
        import_classifier(ts, "mnist")


def test_an_imported_model_is_not_bound_to_the_datasets_files():
    """One image added to a user's folder refused every imported model, with the advice to
    retrain it with latentfuzz; a trained model of other files is still refused."""
    from engine.datasets import get_dataset

    ds = get_dataset("mnist")
    card = {
        "name": "u",
        "kind": "classifier",
        "dataset": "mnist",
        "input_shape": [1, 28, 28],
        "dataset_fingerprint": "0123456789abcdef",
    }
    assert "was trained on mnist data with fingerprint" in zoo.incompatibility(card, ds)
    assert zoo.incompatibility({**card, "format": "onnx"}, ds) is None


def test_models_measure_keeps_the_classifier_the_card_was_measured_with(
    user_home: Path, tmp_path: Path
):
    """An imported decoder measured with the user's own classifier at import was measured
    again with the dataset's default, or not at all where the dataset had none."""
    ts = tmp_path / "clf.pt"
    torch.jit.save(torch.jit.script(Net().eval()), str(ts))
    import_classifier(ts, "mnist")

    def measured_with() -> str:
        return zoo.load_card("u")["metrics"]["viability_classifier"]

    import_generator(
        script(Unconditional(), tmp_path / "u.pt"), "mnist", (2, 4), 10, classifier="clf"
    )
    assert measured_with() == "clf"
    models_cli(["measure", "u"], user_home)
    assert measured_with() == "clf"
    models_cli(["measure", "u", "--classifier", "mnist-convnet"], user_home)
    assert measured_with() == "mnist-convnet"
