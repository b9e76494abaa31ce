"""One instruction set for torch's kernels, where figures must repeat across machines.

torch, oneDNN and MKL pick their kernels by the CPU's instruction set, and the last bits
of a classifier's logits follow: enough to change which individual a search keeps, and
every later draw (docs/changelog.md: the documented campaign gives 64.2 mean iterations
with AVX2 kernels and 64.1 with AVX-512 ones on the same machine). The test suite (its
golden outcomes) and `make figures` pin AVX2, which every x86-64 machine we run on has.
Only environment variables, read when torch loads: call `pin` before anything imports it.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

#: The variables and their values: ATen's dispatch, oneDNN's JIT and MKL's conditional
#: numerical reproducibility.
AVX2 = (
    ("ATEN_CPU_CAPABILITY", "avx2"),
    ("ONEDNN_MAX_CPU_ISA", "AVX2"),
    ("MKL_CBWR", "AVX2"),
)


def pin(environ: MutableMapping[str, str] = os.environ) -> None:
    """Set the AVX2 kernels unless the environment already names others."""
    for name, value in AVX2:
        environ.setdefault(name, value)


def in_use() -> str:
    """The instruction set torch's kernels use in this process (imports torch)."""
    # Deferred (torch loads after `pin`, by design of this module).
    import torch

    return torch.backends.cpu.get_cpu_capability()
