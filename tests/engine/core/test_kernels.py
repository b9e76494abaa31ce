"""The kernels' instruction set is pinned for the suite and `make figures`, and a choice
already in the environment is kept."""

from __future__ import annotations

from engine.core import kernels


def test_pin_sets_avx2_unless_the_environment_names_another():
    env: dict[str, str] = {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE"}
    kernels.pin(env)
    assert env == {
        "ATEN_CPU_CAPABILITY": "avx2",
        "ONEDNN_MAX_CPU_ISA": "AVX512_CORE",
        "MKL_CBWR": "AVX2",
    }


def test_this_test_process_computes_with_the_pinned_kernels():
    # tests/__init__.py pins them before torch loads; loaded first, torch would ignore them.
    assert kernels.in_use() == "AVX2"
