"""Search strategies: importing this package registers every bundled strategy."""

from engine.search.strategies import (  # noqa: F401
    ga,
    gradient,
    interpolate,
    mutation,
    nsga2,
    pixel_ga,
    random_search,
    sinvad,
)
from engine.search.strategies.base import (
    STRATEGIES,
    SearchSpace,
    SearchState,
    Strategy,
    StrategyParams,
)

__all__ = ["STRATEGIES", "SearchSpace", "SearchState", "Strategy", "StrategyParams"]
