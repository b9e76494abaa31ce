"""Batch norm folded into the convolution before it, for inference.

At inference a BatchNorm2d is an affine map per channel, so Conv2d -> BatchNorm2d is one
convolution with rescaled weights and a shifted bias: one pass over the activations less.
The classifier's forward pass is most of a campaign's time, and batch norm about a tenth
of it (issue 12). Only zoo architectures are folded (their layers are ``nn.Sequential``s
whose order is their data flow); TorchScript and ONNX models run as given.
"""

from __future__ import annotations

from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval


def fold_batch_norm(module: nn.Module) -> int:
    """Fold every BatchNorm2d that directly follows a Conv2d inside an ``nn.Sequential``
    into that convolution, in place (the module must be in eval mode); returns how many.
    A batch norm anywhere else is left alone: only in a Sequential is "follows" certain."""
    if module.training:
        raise ValueError("fold_batch_norm needs a module in eval mode (running statistics)")
    folded = 0
    for seq in [m for m in module.modules() if isinstance(m, nn.Sequential)]:
        names = list(seq._modules)
        for a, b in zip(names, names[1:], strict=False):
            conv, bn = seq._modules[a], seq._modules[b]
            is_bn = type(bn) is nn.BatchNorm2d and bn.track_running_stats
            if isinstance(conv, nn.Conv2d) and is_bn:
                seq._modules[a] = fuse_conv_bn_eval(conv, bn)
                seq._modules[b] = nn.Identity()
                folded += 1
    return folded
