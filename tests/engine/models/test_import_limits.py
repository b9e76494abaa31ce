"""`models import` under limits: declared latent shapes are bounded before anything is
allocated, and a model that never answers is stopped in a child process."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.errors import LatentfuzzError
from engine.models.importing import MAX_LATENT_ELEMENTS, import_generator
from tests.engine.models.test_importing import (  # noqa: F401
    Unconditional,
    left_behind,
    models_cli,
    script,
    user_home,
)


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ("100000000000", r"--latent-shape \[100000000000\]: one latent is 100000000000 values"),
        ("4,100000,100000", r"one latent is 40000000000 values, expected at most 1,048,576"),
        ("1e400", r"--latent-shape '1e400': sizes must be whole numbers"),
        ("0,8", r"--latent-shape \[0, 8\]: expected positive sizes"),
    ],
)
def test_a_huge_latent_shape_is_one_line_before_any_allocation(
    user_home: Path,  # noqa: F811
    tmp_path: Path,
    shape: str,
    message: str,
):
    dec = script(Unconditional(), tmp_path / "u.pt")
    args = ["import-generator", str(dec), "--dataset", "mnist", "--latent-shape", shape]
    with pytest.raises(LatentfuzzError, match=message) as e:
        models_cli([*args, "--classes", "10"], user_home)
    assert "\n" not in str(e.value)
    assert left_behind(user_home) == []


def test_the_latent_bound_holds_for_callers_of_the_engine(user_home: Path, tmp_path):  # noqa: F811
    dec = script(Unconditional(), tmp_path / "u.pt")
    with pytest.raises(LatentfuzzError, match="one latent is"):
        import_generator(dec, "mnist", (MAX_LATENT_ELEMENTS + 1,), 10)
    assert left_behind(user_home) == []
