"""Every generator family through the same campaign code, plus each family's contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from engine.campaign.config import parse_config
from engine.campaign.runner import run_campaign
from engine.core.errors import ConfigError, ModelError
from engine.generators import GENERATORS
from engine.models import zoo
from store import Store
from store import campaigns as sc
from tests.engine.conftest import TINY


@pytest.mark.parametrize("family", sorted(TINY))
def test_same_campaign_through_every_generator(family: str, tiny_zoo: Path, tmp_path: Path):
    cfg = parse_config(
        {
            "generator": family,
            "classifier": str(tiny_zoo / "toy.pt"),
            "seeds": 8,
            "seed": 3,
            "target_class": 0,
            "strategy_params": {
                "generations": 12,
                "population": 6,
                "best_left": 2,
                "perturbation": "custom",
                "step": 0.5,
            },
        }
    )
    res = run_campaign(cfg, tmp_path, models_root=tiny_zoo)
    store = Store(tmp_path / "latentfuzz.duckdb")
    assert res.status == "finished"
    seeds = sc.seeds(store, res.campaign_id)
    gens = sc.generations(store, res.campaign_id)
    assert len(seeds) == 8 and (seeds["seed_label"] == 0).all()
    viable = seeds[seeds.viable]
    assert len(viable) >= 1, "no viable seed"
    assert len(gens) == int(viable["iterations"].sum())
    for row in viable.itertuples():
        assert (tmp_path / row.result_image).is_file()
    c = sc.campaign(store, res.campaign_id)
    assert c["generator"] == f"mnist-{family}"
    # Conditional generators sample seeds; the VAE encodes dataset images.
    sampled = (seeds["source_index"] == -1).all()
    assert sampled == GENERATORS.get(family).conditional


@pytest.mark.parametrize("family", sorted(TINY))
def test_decoding_is_deterministic_and_in_range(family: str, tiny_zoo: Path):
    gen = zoo.load_generator(f"mnist-{family}", root=tiny_zoo)
    z = gen.sample_prior(4, torch.Generator().manual_seed(0))
    y = torch.tensor([0, 1, 2, 3])
    a = gen.decode(z, y if gen.conditional else None)
    b = gen.decode(z, y if gen.conditional else None)
    assert torch.equal(a, b)
    assert a.shape == (4, 1, 28, 28) and a.min() >= 0 and a.max() <= 1


def test_conditional_generators_need_labels(tiny_zoo: Path):
    gan = zoo.load_generator("mnist-gan", root=tiny_zoo)
    with pytest.raises(ModelError, match="conditional: labels of shape"):
        gan.decode(torch.zeros(2, 8))


def test_dm_options_are_validated_and_applied(tiny_zoo: Path, tmp_path: Path):
    dm = zoo.load_generator("mnist-dm", root=tiny_zoo)
    assert (dm.steps, dm.guidance) == (2, 1.5)
    dm.configure(steps=3)
    assert len(dm.scheduler.timesteps) == 3
    base = {"generator": "dm", "classifier": str(tiny_zoo / "toy.pt"), "seeds": 1}
    for params, match in (
        ({"steps": 0}, "generator_params.steps"),
        ({"temperature": 1}, r"has no option temperature \(its options: steps, guidance, "),
    ):
        with pytest.raises(ConfigError, match=match):
            run_campaign(
                parse_config({**base, "generator_params": params}), tmp_path, models_root=tiny_zoo
            )
    with pytest.raises(ConfigError, match=r"generator mnist-vae \(vae\) has no option steps"):
        run_campaign(
            parse_config({**base, "generator": "vae", "generator_params": {"steps": 2}}),
            tmp_path,
            models_root=tiny_zoo,
        )
    assert not (tmp_path / "campaigns").exists()


def test_gan_output_is_mapped_to_unit_range(tiny_zoo: Path):
    gan = zoo.load_generator("mnist-gan", root=tiny_zoo)
    z = gan.sample_prior(8, torch.Generator().manual_seed(1))
    raw = gan.net(z, torch.zeros(8, dtype=torch.long))
    assert raw.min() < 0  # tanh output spans [-1, 1] ...
    out = gan.decode(z, torch.zeros(8, dtype=torch.long))
    assert torch.allclose(out, (raw + 1) / 2)  # ... and the classifier sees [0, 1]


def test_cards_of_tiny_zoo_are_json(tiny_zoo: Path):
    for family in TINY:
        card = json.loads((tiny_zoo / f"mnist-{family}" / "card.json").read_text())
        assert card["sha256"] and card["dtype"] == "float16"


def test_gan_keeps_its_discriminator_for_validity_filtering(tiny_zoo: Path):
    gan = zoo.load_generator("mnist-gan", root=tiny_zoo)
    y = torch.arange(4)
    x = gan.decode(gan.sample_prior(4, torch.Generator().manual_seed(0)), y)
    score = gan.realness(x, y)
    assert score.shape == (4,) and torch.isfinite(score).all()


def test_dm_makes_seeds_with_seed_guidance_and_searches_with_search_guidance(
    tiny_zoo: Path, tmp_path: Path
):
    # GIFTbench's DM: guidance 3.5 for the seed images, 1.4 while searching.
    dm = zoo.load_generator("mnist-dm", root=tiny_zoo)
    dm.configure(guidance=1.4, seed_guidance=3.5)
    z, y = dm.sample_prior(3, torch.Generator().manual_seed(0)), torch.tensor([0, 1, 2])
    search = dm.decode(z, y)
    with dm.seeding():
        seeds = dm.decode(z, y)
    dm.configure(guidance=3.5)
    assert torch.equal(seeds, dm.decode(z, y)) and not torch.equal(seeds, search)
    assert dm.guidance == 3.5 and dm.seed_guidance == 3.5  # seeding() restored the search's

    def campaign(**params) -> tuple[dict, list[bytes]]:
        # The bundled DM: the untrained tiny one's images saturate to the same PNGs. The
        # seed images are the subject, so the search is as small as the GA allows.
        cfg = parse_config(
            {
                "generator": "dm",
                "seeds": 3,
                "seed": 4,
                "generator_params": params,
                "strategy_params": {"generations": 1, "population": 3, "best_left": 2},
            }
        )
        res = run_campaign(cfg, tmp_path)
        store = Store(tmp_path / "latentfuzz.duckdb")
        seeds = sc.seeds(store, res.campaign_id)
        images = [(tmp_path / p).read_bytes() for p in seeds["seed_image"]]
        return sc.campaign(store, res.campaign_id)["config"]["generator_params"], images

    a, seed_a = campaign(guidance=1.4, seed_guidance=3.5)
    assert a == {"steps": 4, "guidance": 1.4, "seed_guidance": 3.5}  # both recorded
    _, seed_b = campaign(guidance=1.4, seed_guidance=1.4)
    _, seed_c = campaign(guidance=3.5, seed_guidance=3.5)
    assert seed_a == seed_c != seed_b  # seed images follow the seed guidance alone
    default, _ = campaign(guidance=1.4)
    assert default["seed_guidance"] == 2.0  # the card's measured default, not the search's
