"""Classifiers: zoo architectures and user files (TorchScript, ONNX)."""

from engine.classifiers import onnx, resnet, vgg, zoo_nets  # noqa: F401  (registration)
from engine.classifiers.base import (
    ARCHITECTURES,
    FORMATS,
    Classifier,
    ModuleClassifier,
    format_of,
    load_file,
)
from engine.classifiers.torchscript import load_torchscript

__all__ = [
    "ARCHITECTURES",
    "FORMATS",
    "Classifier",
    "ModuleClassifier",
    "format_of",
    "load_file",
    "load_torchscript",
]
