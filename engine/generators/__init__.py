"""Generators: importing this package registers every bundled family."""

from engine.generators import vae  # noqa: F401  (registration)
from engine.generators.base import GENERATORS, Generator, Seeds

__all__ = ["GENERATORS", "Generator", "Seeds"]
