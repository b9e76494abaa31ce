"""Search strategies: importing this package registers every bundled strategy."""

from engine.search.strategies import ga, interpolate, nsga2, random_search, sinvad  # noqa: F401
from engine.search.strategies.base import (
    STRATEGIES,
    SearchSpace,
    SearchState,
    Strategy,
    StrategyParams,
)

__all__ = ["STRATEGIES", "SearchSpace", "SearchState", "Strategy", "StrategyParams"]
