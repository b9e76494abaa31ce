"""SINVAD's pixel-space baseline: the GA searching the image itself.

The same genetic algorithm as ``ga`` (engine/search/strategies/ga.py: elitism, single-point
crossover, Gaussian mutation of the genes that differ from the seed, the step doubling on
stagnation), over the pixel generator (engine/generators/pixel.py): every gene is a pixel
in [0, 1] and the seed is a real test image. ``ga`` against ``pixel-ga`` at the same
budget is the papers' "latent beats pixel" comparison with nothing else changed. The
step presets are fractions of the pixel range, 1.
"""

from __future__ import annotations

from engine.search.strategies.base import STRATEGIES
from engine.search.strategies.ga import GeneticAlgorithm


@STRATEGIES.register("pixel-ga")
class PixelGA(GeneticAlgorithm):
    name = "pixel-ga"
    generator_family = "pixel"
