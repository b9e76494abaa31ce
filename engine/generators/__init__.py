"""Generators: importing this package registers every bundled family."""

from engine.generators import convvae, dcgan, dm, gan, pixel, sd, torchscript, vae  # noqa: F401
from engine.generators.base import GENERATORS, Generator, GeneratorOptions, Seeds

__all__ = ["GENERATORS", "Generator", "GeneratorOptions", "Seeds"]
