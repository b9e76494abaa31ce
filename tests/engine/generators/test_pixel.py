"""The pixel generator: the latent is the image, seeds are the dataset's test images."""

from __future__ import annotations

import torch

from engine.datasets import get_dataset
from engine.generators import GENERATORS


def test_decode_is_the_identity_clamped_and_encode_the_image():
    gen = GENERATORS.get("pixel")((1, 4, 4), 10)
    assert gen.latent_shape == (1, 4, 4) and gen.latent_bounds == (0.0, 1.0)
    z = torch.linspace(-0.5, 1.5, 32).view(2, 1, 4, 4)
    assert torch.equal(gen.decode(z), z.clamp(0, 1))
    x = torch.rand(2, 1, 4, 4)
    assert torch.equal(gen.encode(x), x)


def test_seeds_are_the_test_images_an_encoder_generator_would_draw():
    test = get_dataset("mnist").load("test")
    gen = GENERATORS.get("pixel")((1, 28, 28), 10)
    seeds = gen.draw_seeds(4, test.images, test.labels, torch.Generator().manual_seed(5))
    # The same rule as every encoder generator: a permutation of the test split.
    idx = torch.randperm(len(test.labels), generator=torch.Generator().manual_seed(5))[:4]
    assert torch.equal(seeds.source_index, idx)
    assert torch.equal(seeds.latents, test.images[idx].float())
    assert torch.equal(seeds.labels, test.labels[idx])


def test_it_follows_the_campaign_device():
    gen = GENERATORS.get("pixel")((1, 4, 4), 10)
    assert gen.device == torch.device("cpu")
    assert gen.to("meta").device == torch.device("meta")
