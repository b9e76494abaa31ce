"""A zoo classifier's forward pass as one frozen, optimised TorchScript graph on the CPU.

Eager PyTorch runs each convolution on plain tensors, repacking its weights and its input
into the CPU library's (oneDNN's) blocked layout at every call and back after it. A graph
traced once, frozen and passed through ``torch.jit.optimize_for_inference`` keeps the
weights prepacked and the activations in the blocked layout from the first convolution to
the last: the bundled MNIST classifier runs 1.6 to 1.8x faster at every batch size on this
machine (issue 12; `latentfuzz bench` measures its limit through the same graph).

Only zoo architectures are converted (their forward pass has no data-dependent branch, so
a trace is the whole model); TorchScript and ONNX files run as given, and other devices
run eagerly. A graph whose logits differ from the eager module's on a check batch is not
used. Forward hooks do not fire inside a graph: code that reads layers through hooks (the
memory bound of engine/campaign/batching.py, penultimate features) runs under `eager_only()`.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import warnings
from collections.abc import Callable, Iterator

import torch
from torch import nn

#: How classifiers run: 1 eagerly (campaigns before the graphs), 2 zoo classifiers as
#: graphs. Recorded in each campaign's environment: a resume replays its campaign's way,
#: since the two differ in the last bits of the logits. A change makes cached batch sweeps
#: stale (engine/campaign/batching.py): the best batch of one way is not the other's.
GRAPHS = 2  # the first path that runs graphs
PATH = GRAPHS
_local = threading.local()
#: Batch sizes of the trace and of the check (a size baked into the graph fails the check).
TRACE_BATCH, CHECK_BATCH = 2, 3


@contextlib.contextmanager
def eager_only() -> Iterator[None]:
    """Run zoo classifiers' eager modules in this thread within the block, so their
    layers' forward hooks fire."""
    depth = getattr(_local, "depth", 0)
    _local.depth = depth + 1
    try:
        yield
    finally:
        _local.depth = depth


def eager_forced() -> bool:
    return getattr(_local, "depth", 0) > 0


def available(device: torch.device) -> bool:
    return device.type == "cpu" and torch.backends.mkldnn.is_available()


def build_graph(
    module: nn.Module, input_shape: tuple[int, ...]
) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """The optimised graph of eval-mode `module` on CPU images of `input_shape`, or None
    where it cannot be built or does not give the eager module's logits."""
    # Deterministic inputs: the campaign's one generator is not touched, nor torch's.
    n = CHECK_BATCH * int(torch.tensor(input_shape).prod())
    check = torch.linspace(0.0, 1.0, n).reshape(CHECK_BATCH, *input_shape)
    try:
        twin = copy.deepcopy(module).eval()  # freezing needs parameters without gradients
        for p in twin.parameters():
            p.requires_grad_(False)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TracerWarnings about shapes, expected here
            traced = torch.jit.trace(twin, check[:TRACE_BATCH], check_trace=False)
            graph = torch.jit.optimize_for_inference(torch.jit.freeze(traced))
        with torch.inference_mode():
            want, got = module(check), graph(check)
    except Exception:  # noqa: BLE001 - an architecture the tracer cannot take runs eagerly
        return None
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return None
    if not torch.allclose(got, want, rtol=1e-4, atol=1e-4 * (1 + float(want.abs().max()))):
        return None
    return graph
