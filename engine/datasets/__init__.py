"""Datasets: importing this package registers every bundled reader; ``get_dataset`` also
finds the user's own datasets (engine/datasets/specs.py)."""

from engine.datasets import imagenet_subset, mnist_embedded, readers  # noqa: F401  (registration)
from engine.datasets.base import (
    DATASETS,
    Dataset,
    DatasetError,
    DataSplit,
    printable,
    read_class_names,
)
from engine.datasets.specs import dataset_names, get_dataset

__all__ = [
    "DATASETS",
    "Dataset",
    "DatasetError",
    "DataSplit",
    "dataset_names",
    "get_dataset",
    "printable",
    "read_class_names",
]
