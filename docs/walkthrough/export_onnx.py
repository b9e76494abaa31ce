"""Stands in for "your classifier" in the README walk-through: exports a classifier that
`latentfuzz train classifier` made to ONNX, as you would export your own model.
Usage: python export_onnx.py NAME OUT.onnx (with $LATENTFUZZ_HOME as for training)."""

import sys

import torch

from engine.core.files import load_weights
from engine.models import zoo

name, out = sys.argv[1], sys.argv[2]
card = zoo.load_card(name)
model = zoo.build_classifier_module(card)
load_weights(model, zoo.model_folder(name))
c, h, w = zoo.card_image_shape(card)
torch.onnx.export(
    model.eval(),
    (torch.rand(2, c, h, w),),
    out,
    input_names=["input"],
    dynamic_axes={"input": {0: "batch"}},
    dynamo=False,
)
print(f"wrote {out}")
