"""Classifiers: zoo architectures and user TorchScript files."""

from engine.classifiers import resnet, vgg, zoo_nets  # noqa: F401  (registration)
from engine.classifiers.base import ARCHITECTURES, Classifier, ModuleClassifier
from engine.classifiers.torchscript import load_torchscript

__all__ = ["ARCHITECTURES", "Classifier", "ModuleClassifier", "load_torchscript"]
