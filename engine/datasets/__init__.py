"""Datasets: importing this package registers every bundled reader."""

from engine.datasets import imagenet_subset, mnist_embedded, readers  # noqa: F401  (registration)
from engine.datasets.base import DATASETS, Dataset, DatasetError, DataSplit, get_dataset

__all__ = ["DATASETS", "Dataset", "DatasetError", "DataSplit", "get_dataset"]
