"""dashboard/components.py: the convergence chart's axis titles, single points, and the
failure line drawn only where a score splits failing from passing."""

from __future__ import annotations


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
