"""dashboard/components.py: the convergence chart's axis titles, single points, and the
failure line drawn only where a score splits failing from passing."""

from __future__ import annotations

import os

import pytest


def test_convergence_chart_says_what_the_fitness_is_and_draws_single_points():
    import pandas as pd

    from dashboard.components import convergence_chart
    from engine.search.fitness import BOUNDARY_UNCHANGED

    one = pd.DataFrame(
        {
            "seed_idx": [0],
            "generation": [1],
            "evaluations": [25],
            "elapsed_s": [0.1],
            "best_fitness": [0.5],
            "best_pred": [3],
        }
    )
    spec = convergence_chart(one).to_dict()
    line = spec["layer"][0]
    assert line["mark"]["point"]  # one row still draws a visible mark
    assert line["encoding"]["x"]["axis"]["format"] == "d"  # whole generations
    assert "(margin of the expected class)" in line["encoding"]["y"]["title"]
    two = pd.concat([one, one.assign(generation=2, best_fitness=BOUNDARY_UNCHANGED)])
    spec = convergence_chart(two, fitness="boundary").to_dict()
    assert "(L1 distance to the seed," in spec["layer"][0]["encoding"]["y"]["title"]
    data = spec["datasets"][spec["layer"][0]["data"]["name"]]
    assert [r["best_fitness"] for r in data] == [0.5]  # the 1e6 placeholder is not drawn


def test_the_escape_chart_draws_distances_not_the_unreached_placeholder():
    """A class-escape campaign's chart ran from 0 to 1,000,000 (SINVAD's "not reached yet"
    score), every distance flat on the axis, titled "best fitness(escape)"."""
    import pandas as pd

    from dashboard.components import convergence_chart
    from engine.search.fitness import BOUNDARY_UNCHANGED

    gens = pd.DataFrame(
        {
            "seed_idx": [0, 0, 1],
            "generation": [1, 2, 1],
            "evaluations": [25, 50, 25],
            "elapsed_s": [0.1, 0.2, 0.1],
            "best_fitness": [BOUNDARY_UNCHANGED, 12.5, BOUNDARY_UNCHANGED],
            "best_pred": [3, 4, 3],
        }
    )
    spec = convergence_chart(gens, fitness="escape", criterion="targeted").to_dict()
    data = spec["datasets"][spec["layer"][0]["data"]["name"]]
    assert [r["best_fitness"] for r in data] == [12.5]
    assert spec["layer"][0]["encoding"]["y"]["title"] == [
        "best fitness",
        "(L1 distance to the seed,",
        "once the target is reached)",
    ]


def test_the_failure_line_is_drawn_only_where_a_score_splits_failing_from_passing():
    """A red line at 0 on every convergence chart read, for a divergence or a boundary
    distance, as a failure threshold that those objectives do not have."""
    import pandas as pd

    from dashboard.components import convergence_chart

    gens = pd.DataFrame(
        {
            "seed_idx": [0, 0],
            "generation": [1, 2],
            "evaluations": [25, 50],
            "elapsed_s": [0.1, 0.2],
            "best_fitness": [0.5, -0.2],
            "best_pred": [3, 5],
        }
    )

    def rules(**kw) -> list:
        spec = convergence_chart(gens, **kw).to_dict()
        return [
            spec["datasets"][layer["data"]["name"]][0]["y"]
            for layer in spec["layer"]
            if layer["mark"].get("type") == "rule"
        ]

    assert rules() == rules(fitness="targeted") == [0.0]
    assert rules(fitness="margin", criterion="misclassified") == [0.0]
    assert rules(fitness="divergence") == rules(fitness="boundary") == []
    # A margin searched under another criterion: 0 is not where that criterion fails.
    assert rules(fitness="margin", criterion="disagree") == []


def test_load_image_never_opens_a_path_outside_the_home(tmp_path):
    """A store may hold a path from a shared file (a study CSV imported before the gate):
    absolute, `..` or a symlink out of the home is not shown, whatever let it in."""
    import numpy as np
    from PIL import Image

    from dashboard.components import load_image

    home = tmp_path / "home"
    (home / "u").mkdir(parents=True)
    secret = tmp_path / "secret.png"
    Image.fromarray(np.full((4, 4), 200, np.uint8)).save(secret)
    (home / "u" / "mine.png").write_bytes(secret.read_bytes())
    (home / "u" / "link.png").symlink_to(secret)
    assert load_image(home, "u/mine.png", scale=2).size == (8, 8)  # inside: shown, enlarged
    assert load_image(home, str(home / "u" / "mine.png")).size == (16, 16)
    for rel in (str(secret), "../secret.png", "u/../../secret.png", "u/link.png"):
        assert load_image(home, rel) is None, rel


@pytest.mark.timeout(60)
def test_load_image_never_waits_on_a_pipe_in_the_home(tmp_path):
    from dashboard.components import load_image

    home = tmp_path / "home"
    home.mkdir()
    os.mkfifo(home / "study.png")  # no writer: opening it for reading waits for ever
    assert load_image(home, "study.png") is None
    assert load_image(home, ".") is None  # the home itself, a folder


def test_load_image_refuses_a_decompression_bomb_and_bounds_the_enlargement(tmp_path):
    import numpy as np
    from PIL import Image

    from dashboard.components import SHOWN_SIDE, load_image
    from tests.crafted_files import png_bomb

    png_bomb(tmp_path / "bomb.png")  # 440 KB, 3.6 GB decoded
    assert load_image(tmp_path, "bomb.png") is None
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not an image")
    assert load_image(tmp_path, "broken.png") is None
    Image.fromarray(np.zeros((600, 300), np.uint8)).save(tmp_path / "big.png")
    shown = load_image(tmp_path, "big.png", scale=8)  # 4800 px high: kept under the bound
    assert max(shown.size) <= SHOWN_SIDE and shown.size == (900, 1800)


def _status_bar_app(whole_budget: bool) -> None:
    from dashboard.components import status_bar

    summary = {"viable": 9, "misclassified": 4, "misclassified_pct": 44.4}
    summary |= {"iterations_icst": 7.5, "iterations_to_failure": 3.0, "criterion": None}
    summary |= {"generations": 10, "evaluations_per_seed": 1600.0}
    status_bar(summary, 10, whole_budget=whole_budget)


@pytest.mark.parametrize(
    ("whole_budget", "tiles"),
    [
        (False, [("iterations (ICST)", "7.5"), ("iterations to failure", "3.0")]),
        # NSGA-II searches its whole budget: "iterations" read as the length of the search,
        # and "generation found (ICST)" still gave no generations nor evaluations.
        (
            True,
            [
                ("generations", "10"),
                ("evaluations / seed", "1,600"),
                ("found in generation", "3.0"),
            ],
        ),
    ],
)
def test_the_status_bar_uses_the_strategys_words(whole_budget: bool, tiles: list[tuple]):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_status_bar_app, kwargs={"whole_budget": whole_budget}).run(
        timeout=60
    )
    assert not at.exception
    assert [(m.label, m.value) for m in at.metric][2:] == tiles


def test_a_pair_is_one_image_with_a_missing_one_leaving_its_place():
    from PIL import Image

    from dashboard.components import PAIR_GAP, side_by_side

    a, b = Image.new("L", (84, 84), 0), Image.new("L", (84, 84), 255)
    pair = side_by_side([a, b])
    assert pair.size == (2 * 84 + PAIR_GAP, 84)
    assert pair.getpixel((10, 10)) == (0, 0, 0) and pair.getpixel((84 + PAIR_GAP + 10, 10)) == (
        255,
        255,
        255,
    )
    # A seed without a result yet: the seed stays on the left, the right stays blank.
    alone = side_by_side([a, None])
    assert alone.size == pair.size and alone.getpixel((84 + PAIR_GAP + 10, 10)) == (255, 255, 255)
    assert side_by_side([None, None]) is None
