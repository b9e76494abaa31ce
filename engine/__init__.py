"""latentfuzz headless engine: datasets, generators, classifiers, search and the campaign runner."""

__version__ = "0.1.0"
