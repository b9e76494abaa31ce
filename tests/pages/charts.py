"""The Vega-Lite specs of the charts a page's AppTest run drew."""

from __future__ import annotations

import json


def specs(at) -> list[dict]:
    """Each Vega-Lite chart on the page, as its spec."""
    return [json.loads(c.proto.spec) for c in at.get("arrow_vega_lite_chart")] or [
        json.loads(c.proto.spec) for c in at.get("vega_lite_chart")
    ]
