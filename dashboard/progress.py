"""A running campaign's progress as a fraction and an estimate of the time left.

The search advances all seeds together one generation at a time, so the share of the
generation budget done is the honest measure; seeds that stop early (their first
misclassification) can only end the campaign sooner, so the estimate is an upper bound.
Strategies without a generation budget fall back to the share of seeds done.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from dashboard.form_check import duration


def generation_budget(config: dict[str, Any] | None) -> int | None:
    """The campaign's generation budget from its stored config, or None."""
    g = ((config or {}).get("strategy_params") or {}).get("generations")
    return int(g) if g else None


def campaign_progress(
    campaign: dict[str, Any], progress: dict[str, Any], now: datetime | None = None
) -> tuple[float, str]:
    """(fraction done in [0, 1], one line: where it is and about how long is left)."""
    budget = generation_budget(campaign.get("config"))
    n, done = int(progress.get("n_seeds") or 0), int(progress.get("seeds_done") or 0)
    gen = int(progress.get("generation") or 0)
    seeds = done / n if n else 0.0
    frac = max(seeds, min(1.0, gen / budget)) if budget else seeds
    where = (
        f"generation {gen}" + (f" of {budget}" if budget else "") + f" · {done} of {n} seeds done"
    )
    now = now or datetime.now(UTC).replace(tzinfo=None)  # the store's clock: naive UTC
    elapsed = (now - campaign["created_at"]).total_seconds()
    if frac <= 0 or elapsed <= 0:
        return 0.0, f"{where} · estimating the time left…"
    left = elapsed * (1 - frac) / frac
    return frac, f"{where} · {duration(elapsed)} elapsed, at most about {duration(left)} left"
