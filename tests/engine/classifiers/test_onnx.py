"""User ONNX classifiers: each way an exported file can be wrong gets its own clear error,
and a good one gives the torch model's logits."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

from engine.classifiers import load_file
from engine.classifiers.onnx import external_data_files, load_onnx, parameter_count
from engine.core.errors import ModelError
from engine.models import zoo

SHAPE = (1, 28, 28)


class Net(nn.Module):
    """A small conv net: enough operators that a wrong export shows."""

    def __init__(self, channels: int = 1, k: int = 10, side: int = 28) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, 4, 3, padding=1)
        self.fc = nn.Linear(4 * (side // 2) ** 2, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.max_pool2d(torch.relu(self.conv(x)), 2).flatten(1))


class NaNOut(Net):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) * torch.log(x.min() - 1)  # log of a negative: NaN


class BatchDependent(Net):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) + x.sum() * 0.1  # mixes the images of a batch


class ChannelsLast(Net):
    """Takes (B, H, W, C), as Keras models exported with tf2onnx do."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.permute(0, 3, 1, 2))


def export(
    model: nn.Module,
    path: Path,
    dynamic: bool = True,
    shape: tuple[int, ...] = SHAPE,
    external: bool = False,
) -> Path:
    torch.manual_seed(0)
    model = model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (torch.rand(2, *shape),),
            str(path),
            input_names=["input"],
            output_names=["logits"],
            dynamic_axes={"input": {0: "batch"}} if dynamic else None,
            dynamo=False,
        )
    if external:
        # The TorchScript exporter keeps small weights inline whatever it is asked; big
        # models (and torch's default exporter) write them to a file beside the model.
        import onnx

        onnx.save_model(
            onnx.load(str(path)),
            str(path),
            save_as_external_data=True,
            location=path.name + ".data",
            size_threshold=0,
        )
    return path


@pytest.fixture(scope="module")
def net() -> nn.Module:
    torch.manual_seed(0)
    return Net().eval()


@pytest.fixture(scope="module")
def good(tmp_path_factory, net) -> Path:
    return export(net, tmp_path_factory.mktemp("onnx") / "good.onnx")


def test_dynamic_batch_loads_and_matches_torch(good: Path, net):
    clf = load_onnx(good, SHAPE, 10, "mnist")
    x = torch.rand(7, *SHAPE, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = net(x)
    got = clf.logits(x)
    assert got.shape == (7, 10) and got.dtype == torch.float32
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    assert parameter_count(good) == sum(p.numel() for p in net.parameters())


def test_zoo_loads_onnx_paths(good: Path, net):
    clf = zoo.load_classifier(str(good), "mnist")
    assert clf.name == "good.onnx"
    assert zoo.resolve("classifier", "mnist", str(good)) == str(good)
    assert type(load_file(good, SHAPE, 10, "mnist")) is type(clf)


def test_fixed_batch_is_refused_with_how_to_re_export(tmp_path: Path, net):
    path = export(net, tmp_path / "fixed.onnx", dynamic=False)
    with pytest.raises(ModelError, match=r"fixed batch of 2 .*dynamic_axes=\{'input': \{0: "):
        load_onnx(path, SHAPE, 10, "mnist")


def test_wrong_input_shape(tmp_path: Path):
    path = export(Net(3, 10, 32), tmp_path / "cifar.onnx", shape=(3, 32, 32))
    with pytest.raises(
        ModelError, match=r"input 'input' has shape \['batch', 3, 32, 32\]; expected mnist"
    ):
        load_onnx(path, SHAPE, 10, "mnist")


def test_channels_last_input_is_accepted(tmp_path: Path, net):
    last = ChannelsLast()
    last.load_state_dict(net.state_dict())
    path = export(last, tmp_path / "nhwc.onnx", shape=(28, 28, 1))
    clf = load_onnx(path, SHAPE, 10, "mnist")
    x = torch.rand(3, *SHAPE)
    with torch.no_grad():
        torch.testing.assert_close(clf.logits(x), net(x), atol=1e-4, rtol=1e-4)


def test_wrong_class_count(tmp_path: Path):
    path = export(Net(k=7), tmp_path / "seven.onnx")
    with pytest.raises(ModelError, match="returns 7 classes, dataset mnist has 10"):
        load_onnx(path, SHAPE, 10, "mnist")


def test_nan_outputs(tmp_path: Path):
    path = export(NaNOut(), tmp_path / "nan.onnx")
    with pytest.raises(ModelError, match="nan.onnx returned NaN or infinite logits"):
        load_onnx(path, SHAPE, 10, "mnist")


def test_batch_dependent_logits(tmp_path: Path):
    path = export(BatchDependent(), tmp_path / "mixing.onnx")
    with pytest.raises(ModelError, match="different logits for the same image in batches"):
        load_onnx(path, SHAPE, 10, "mnist")


def test_external_data_loads_with_its_file_and_is_refused_without(tmp_path: Path, net):
    path = export(net, tmp_path / "ext.onnx", external=True)
    (data,) = external_data_files(path)
    assert (tmp_path / data).is_file()
    assert load_onnx(path, SHAPE, 10, "mnist").logits(torch.rand(2, *SHAPE)).shape == (2, 10)
    (tmp_path / data).unlink()
    with pytest.raises(
        ModelError, match=rf"external data file '{data}', which is not in .*external_data=False"
    ):
        load_onnx(path, SHAPE, 10, "mnist")


def test_corrupt_file(tmp_path: Path):
    path = tmp_path / "broken.onnx"
    path.write_bytes(
        torch.randint(0, 256, (4096,), generator=torch.Generator().manual_seed(3))
        .to(torch.uint8)
        .numpy()
        .tobytes()
    )
    with pytest.raises(ModelError, match=r"could not load .*broken.onnx as ONNX .*torch.onnx"):
        load_onnx(path, SHAPE, 10, "mnist")


def test_missing_file(tmp_path: Path):
    with pytest.raises(ModelError, match=r"does not exist; give the path of an ONNX \(.onnx\)"):
        load_onnx(tmp_path / "nope.onnx", SHAPE, 10, "mnist")
