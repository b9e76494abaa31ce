"""One colour-blind-safe categorical palette for every chart that tells groups apart.

Okabe & Ito (2008), "Color Universal Design": eight colours distinguishable with the
common colour-vision deficiencies. Vega-Lite's default (tableau10) put two campaigns in
similar blues; this order starts with the most distinct hues."""

from __future__ import annotations

import altair as alt

OKABE_ITO = ["#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#F0E442", "#000000"]


def categorical(
    field: str, title: str | None = None, domain: list | None = None, listed: list | None = None
) -> alt.Color:
    """A nominal colour encoding of `field` in the Okabe-Ito palette; with `domain`, each
    value keeps its colour in every chart that passes the same list (else a value's colour
    depends on which values that chart's data holds). `listed`: the values the legend
    names, where the chart draws only some of the domain (a legend lists all of it)."""
    scale = alt.Scale(range=OKABE_ITO, domain=domain) if domain else alt.Scale(range=OKABE_ITO)
    legend = alt.Legend(values=listed) if listed is not None else alt.Undefined
    return alt.Color(f"{field}:N", scale=scale, title=title or field, legend=legend)
