"""User classifiers as an ONNX file, run by onnxruntime and validated on load.

ONNX is how TensorFlow, Keras and JAX users hand over a model (tf2onnx, jax2onnx), and
what `torch.onnx.export` writes. The checks mirror the TorchScript loader's, plus what an
exported graph can get wrong on its own: a fixed batch dimension, a weights file
(external data) left behind, a channels-last input. Each refusal is one line naming what
was received, what was expected and the fix.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from engine.classifiers.base import Classifier, check_probe, refuse_empty, register_format
from engine.core.errors import ModelError, cause, refuse_not_file
from engine.core.untrusted import UntrustedFileError, inside, quote

EXPORT = (
    "torch.onnx.export(model.eval(), torch.rand(1, C, H, W), 'model.onnx', "
    "input_names=['input'], dynamic_axes={'input': {0: 'batch'}})"
)
CUDA = "CUDAExecutionProvider"


def _model(path: Path):
    """The ModelProto of an ONNX file, its external weights not read. ModelError (one line)
    when the file is not one: the protobuf parser is the one onnxruntime uses."""
    # Deferred (start-up time: loads onnx and protobuf).
    import onnx

    try:
        return onnx.load_model(str(path), load_external_data=False)
    except Exception as e:  # noqa: BLE001 - protobuf raises its own types for bad bytes
        raise ModelError(
            f"could not load {path} as ONNX ({cause(e)}); expected a model written by "
            f"torch.onnx.export, tf2onnx or jax2onnx"
        ) from e


def _tensors(message) -> Iterator:
    """Every TensorProto anywhere under a protobuf message: initializers, sparse ones,
    node attributes, subgraphs (If, Loop, Scan) and functions alike, found by type rather
    than by field, so that no place a tensor can hide is missed."""
    for field, value in message.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        # A single message has ListFields; a repeated field is a container of them.
        for item in (value,) if hasattr(value, "ListFields") else value:
            if type(item).__name__ == "TensorProto":
                yield item
            yield from _tensors(item)


def _locations(path: Path, model) -> list[str]:
    """Each external data location the model names, once checked to lie inside its folder.

    Every tensor counts, used or not: onnxruntime checks only those it loads, while an
    import copies every location it is given (an unused initializer pointing at
    ../../../.bashrc overwrote the file beside the home)."""
    folder = path.absolute().parent
    found: set[str] = set()
    for tensor in _tensors(model):
        for entry in tensor.external_data:
            if entry.key != "location":
                continue
            field = f"external_data location of tensor {quote(tensor.name)}"
            if Path(entry.value).is_absolute():
                raise UntrustedFileError(
                    f"{field} in {path} is {quote(entry.value)}, an absolute path; ONNX names "
                    f"external data relative to the model's folder: ask its author for a "
                    f"copy saved with onnx.save_model(..., location='<name>.data')"
                )
            inside(folder, entry.value, field, source=str(path))
            found.add(entry.value)
    return sorted(found)


def external_data_files(path: Path) -> list[str]:
    """File names, relative to the model's folder, that hold its external weights, each
    checked to lie inside that folder (UntrustedFileError otherwise)."""
    return _locations(path, _model(path))


def parameter_count(path: Path) -> int:
    """How many weights the ONNX graph holds (its initializers' elements)."""
    return sum(math.prod(t.dims) for t in _model(path).graph.initializer)


def _session(path: Path, providers: list[str]):
    # Deferred (start-up time: loads onnxruntime).
    import onnxruntime as ort  # slow to import: only when an ONNX classifier is used

    opts = ort.SessionOptions()
    # As many threads as torch uses, so a campaign's settings hold for both runtimes.
    opts.intra_op_num_threads = torch.get_num_threads()
    opts.log_severity_level = 3  # errors reach the user through our message, once
    return ort.InferenceSession(str(path), sess_options=opts, providers=providers)


class OnnxClassifier(Classifier):
    """An onnxruntime session behind the Classifier interface. ``nhwc``: the graph takes
    channels-last images, so batches are permuted on the way in."""

    def __init__(
        self, path: Path, session, input_name: str, nhwc: bool, input_shape, num_classes, name
    ) -> None:
        super().__init__(input_shape, num_classes, name)
        self.path, self.session, self.input_name, self.nhwc = path, session, input_name, nhwc
        self.output_name = session.get_outputs()[0].name  # the first output: the logits

    def _to(self, device: torch.device) -> None:
        # Deferred (start-up time: loads onnxruntime).
        import onnxruntime as ort  # slow to import: only when an ONNX classifier is used

        want = CUDA if device.type == "cuda" and CUDA in ort.get_available_providers() else None
        if want is not None and want not in self.session.get_providers():
            self.session = _session(self.path, [want, "CPUExecutionProvider"])

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        if self.nhwc:
            x = x.permute(0, 2, 3, 1)
        arr = np.ascontiguousarray(x.detach().to("cpu", torch.float32).numpy())
        (out,) = self.session.run([self.output_name], {self.input_name: arr})
        return torch.from_numpy(np.asarray(out)).to(self.device)


def _layout(dims: list, shape: tuple[int, int, int]) -> bool | None:
    """True for NHWC, False for NCHW, None when dims fit neither. Named (symbolic)
    dimensions match any size."""
    c, h, w = shape

    def fits(want: tuple[int, int, int]) -> bool:
        return all(not isinstance(d, int) or d == e for d, e in zip(dims[1:], want, strict=True))

    if len(dims) != 4:
        return None
    if fits((c, h, w)):
        return False
    return True if fits((h, w, c)) else None


@register_format("onnx", (".onnx",))
def load_onnx(
    path: str | Path, input_shape: tuple[int, int, int], num_classes: int, dataset: str = "?"
) -> OnnxClassifier:
    """Load and validate an ONNX classifier for images of input_shape in [0, 1]."""
    path = Path(path)
    refuse_not_file(path, "classifier file", "an ONNX (.onnx) file")
    refuse_empty(path, "ONNX")
    missing = [n for n in external_data_files(path) if not (path.parent / n).is_file()]
    if missing:
        raise ModelError(
            f"{path.name} keeps its weights in external data file {missing[0]!r}, which is "
            f"not in {path.parent}; copy it beside {path.name}, or re-export with "
            f"torch.onnx.export(..., external_data=False) to get one self-contained file"
        )
    try:
        session = _session(path, ["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - onnxruntime raises its own types for bad files
        raise ModelError(
            f"could not load {path} as ONNX ({cause(e)}"
            f"); expected a model written by torch.onnx.export, tf2onnx or jax2onnx"
        ) from e
    inputs = session.get_inputs()
    c, h, w = input_shape
    want = f"(batch, {c}, {h}, {w}) float32 in [0, 1]"
    if len(inputs) != 1:
        names = ", ".join(i.name for i in inputs)
        raise ModelError(
            f"{path.name} takes {len(inputs)} inputs ({names}); a classifier takes one batch "
            f"of {dataset} images {want}: export the model with that one input"
        )
    inp = inputs[0]
    if inp.type != "tensor(float)":
        raise ModelError(
            f"{path.name} input {inp.name!r} is {inp.type}; expected tensor(float), {dataset} "
            f"images {want}: export with a float32 example input"
        )
    nhwc = _layout(list(inp.shape), input_shape)
    if nhwc is None:
        raise ModelError(
            f"{path.name} input {inp.name!r} has shape {list(inp.shape)}; expected {dataset} "
            f"images {want} (channels-last (batch, {h}, {w}, {c}) also works): export with an "
            f"example input of that shape"
        )
    if isinstance(inp.shape[0], int):
        raise ModelError(
            f"{path.name} was exported with a fixed batch of {inp.shape[0]} (input "
            f"{inp.name!r} shape {list(inp.shape)}); latentfuzz classifies populations in "
            f"batches: re-export with dynamic_axes={{{inp.name!r}: {{0: 'batch'}}}} (or "
            f"dynamo=True with dynamic_shapes)"
        )
    clf = OnnxClassifier(path, session, inp.name, nhwc, input_shape, num_classes, path.name)
    probe = torch.rand((3, *input_shape), generator=torch.Generator().manual_seed(0))
    try:
        out3, out1 = clf._logits(probe), clf._logits(probe[:1])
    except Exception as e:  # noqa: BLE001 - any failure here is the graph refusing our input
        raise ModelError(
            f"{path.name} failed on {dataset} images of shape (batch, {c}, {h}, {w}) "
            f"({cause(e)}); export it for that shape"
        ) from e
    check_probe(path.name, out3, out1, num_classes, dataset, "its first output must be the logits")
    return clf
