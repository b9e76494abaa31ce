"""Compare's charts: which campaigns share a convergence chart (one objective each) and
the share of viable seeds failed by iteration."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from dashboard.palette import categorical


def by_objective(camps: pd.DataFrame, ids: list[str]) -> dict[str, list[str]]:
    """{objective: campaign ids}, in the selection's order: fitness values of different
    objectives (a logit margin, a latent distance, a divergence) share no scale, so a
    convergence chart holds one objective's campaigns only."""
    # A campaign imported from another tool's results records no objective (and has no
    # generation rows to draw): "not recorded", not a margin chart of nothing.
    fitness = dict(
        zip(
            camps["id"],
            ((c or {}).get("fitness") or "not recorded" for c in camps["config"]),
            strict=True,
        )
    )
    out: dict[str, list[str]] = {}
    for c in ids:
        out.setdefault(fitness[c], []).append(c)
    return out


def failure_curves(
    failures: dict[str, pd.Series], n_viable: dict[str, int], names: dict[str, str]
) -> pd.DataFrame:
    """Share of viable seeds failed by iteration, a step curve per campaign with a failure
    (iterations, share, campaign): each from (0, 0) to the last failure of any campaign,
    as a step line through one point (a campaign with a single failing seed) drew nothing."""
    end = max((float(it.max()) for it in failures.values() if len(it)), default=0.0)
    curves = []
    for c, it in failures.items():
        if not len(it):
            continue
        x = list(it.sort_values().astype(float))
        y = list(np.arange(1, len(it) + 1) / n_viable[c])
        tail = [(end, y[-1])] if x[-1] < end else []
        points = [(0.0, 0.0), *zip(x, y, strict=True), *tail]
        frame = pd.DataFrame(points, columns=["iterations", "share"])
        curves.append(frame.assign(campaign=names[c]))
    return (
        pd.concat(curves) if curves else pd.DataFrame(columns=["iterations", "share", "campaign"])
    )


def convergence_bands(
    bands: pd.DataFrame, order: list[str], names: list[str], objective: str, height: int
) -> alt.LayerChart:
    """Median best fitness per generation of each campaign with its inter-quartile band,
    one colour per campaign in the selection's `order`; `names` are those drawn here."""
    base = alt.Chart(bands[bands["campaign"].isin(names)]).encode(
        x="generation:Q", color=categorical("campaign", domain=order, listed=names)
    )
    return (
        (
            base.mark_area(opacity=0.15).encode(y="q1:Q", y2="q3:Q")
            + base.mark_line(strokeWidth=2.5).encode(
                y=alt.Y("median:Q", title="median best fitness")
            )
        )
        # The objective in the title: in the axis title it was cut off.
        .properties(height=height, title=f"objective: {objective}")
        # The legend draws the first layer's symbol: the bands' 15% opacity made every
        # campaign's swatch the same pale tint.
        .configure_legend(symbolOpacity=1)
    )


def failure_chart(curves: pd.DataFrame, order: list[str]) -> alt.Chart:
    """The share of viable seeds failed by each iteration, a step line per campaign."""
    return (
        alt.Chart(curves)
        .mark_line(interpolate="step-after")
        .encode(
            x="iterations:Q",
            y=alt.Y(
                "share:Q", title="share of viable seeds failed", scale=alt.Scale(domain=[0, 1])
            ),
            color=categorical("campaign", domain=order),
        )
        .properties(height=300)
    )
