"""DiffGAN as the paper defines it (issue 35): NSGA-II's first population, its ablation on
divergence alone, and the outcome metrics (geometric diversity with subset, draws and
features as parameters; the Shannon diversity)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from engine.search import diversity
from engine.search.diversity import GeometricSpec, geometric_diversity, shannon_diversity
from engine.search.strategies import STRATEGIES
from engine.search.strategies.base import SearchSpace
from engine.search.strategies.nsga2 import initial_population

SPACE = SearchSpace((6,), -5.0, 5.0)


def nsga2(**raw):
    cls = STRATEGIES.get("nsga2")
    return cls(cls.Params(**raw), SPACE)


def rng(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --- the first population -------------------------------------------------------------


def test_the_first_population_is_diffgans_100_latents_from_uniform_minus_one_to_one():
    s = nsga2()
    assert s.params.population == 100 and s.params.init == "uniform"
    seeds = torch.full((3, 6), 4.0)  # far outside [-1, 1]: the seed is not drawn from
    s.start(seeds, rng(0))
    assert s.pop.shape == (3, 100, 6)
    assert s.pop.min() >= -1 and s.pop.max() <= 1
    # U[-1, 1]: mean 0, variance 1/3 (1,800 draws: SE of the mean 0.014, of the var 0.006).
    assert s.pop.mean().item() == pytest.approx(0.0, abs=0.06)
    assert s.pop.var().item() == pytest.approx(1 / 3, abs=0.03)
    # Spread over the whole interval, not around the seed.
    assert (s.pop < -0.9).any() and (s.pop > 0.9).any()


def test_the_first_population_is_drawn_from_the_campaigns_seeded_generator():
    seeds = torch.zeros(2, 6)
    a, b, c = nsga2(population=8), nsga2(population=8), nsga2(population=8)
    a.start(seeds, rng(7))
    b.start(seeds, rng(7))
    c.start(seeds, rng(8))
    assert torch.equal(a.pop, b.pop) and not torch.equal(a.pop, c.pop)
    # Each search draws its own latents.
    assert not torch.equal(a.pop[0], a.pop[1])


def test_the_old_seed_plus_noise_init_stays_under_its_name():
    seeds = torch.arange(12.0).reshape(2, 6) / 10
    s = nsga2(population=8, init="seed-noise")
    s.start(seeds, rng(0))
    assert s.pop.shape == (2, 8, 6)
    assert torch.equal(s.pop[:, 0], seeds)  # the seed leads its population
    # The rest are N(0, I) draws (clamped to the bounds): values beyond U[-1, 1]'s reach.
    assert s.pop[:, 1:].abs().max() > 1
    pop = initial_population(seeds, 8, "seed-noise", rng(0))
    assert torch.equal(pop, s.pop)  # within [-5, 5] nothing was clamped here


def test_an_unknown_init_is_refused():
    with pytest.raises(ValueError, match="init"):
        nsga2(init="normal")
    with pytest.raises(ValueError, match="init 'x' unknown"):
        initial_population(torch.zeros(1, 2), 4, "x", rng(0))


# --- the ablation ---------------------------------------------------------------------


def started(**raw):
    s = nsga2(population=6, cluster_every=1, **raw)
    s.start(torch.zeros(2, 6), rng(0))
    images = torch.randint(0, 256, (2, 6, 1, 4, 4), dtype=torch.uint8)
    failing = torch.zeros(2, 6, dtype=torch.bool)
    failing[:, :3] = True
    slots, _ = s.ask()
    s.tell(slots, torch.rand(2, 6), torch.rand(2, 6, 10))
    return s, images, failing, slots


@pytest.mark.parametrize(("objectives", "count"), [("both", 2), ("divergence", 1)])
def test_the_ablation_sorts_on_one_objective(objectives, count, monkeypatch):
    calls = []
    real = diversity.image_features
    monkeypatch.setattr(
        "engine.search.strategies.nsga2.image_features", lambda x: calls.append(1) or real(x)
    )
    s, images, failing, slots = started(objectives=objectives)
    s.see(slots, images, failing)
    assert s.objectives().shape == (2, 6, count)
    s.advance(rng(1))
    assert s.pop.shape == (2, 12, 6)  # P survivors and P children, either way
    assert s.objectives().shape == (2, 12, count)
    if objectives == "divergence":
        # Nothing computes a diversity it never uses, and none is recorded.
        assert calls == [] and len(s.archive) == 0
        assert s.state().objective2 is None
    else:
        assert calls == [1] and len(s.archive) > 0
        assert s.state().objective2 is not None


def test_the_ablation_keeps_the_fittest_by_divergence_alone():
    s, images, failing, slots = started(objectives="divergence")
    s.see(slots, images, failing)
    s.scores = torch.tensor([[5.0, 1.0, 4.0, 0.0, 3.0, 2.0]] * 2)  # minimised
    s.advance(rng(1))
    # The survivors are the whole first population here (P of P), the best first.
    assert s.scores[:, :6].tolist() == [[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]] * 2


def test_the_ablation_is_a_parameter_recorded_with_the_campaign(tmp_path):
    from engine.campaign.config import parse_config
    from engine.campaign.runner import run_campaign
    from store import Store
    from store import campaigns as sc

    cfg = parse_config(
        {
            "generator": "gan",
            "classifier": "convnet",
            "classifier_b": "lenet5",
            "strategy": "nsga2",
            "seeds": 1,
            "seed": 1,
            "validators": {},
            "strategy_params": {"generations": 2, "population": 6, "objectives": "divergence"},
        }
    )
    cid = run_campaign(cfg, tmp_path).campaign_id
    c = sc.campaign(Store(tmp_path / "latentfuzz.duckdb"), cid)
    assert c["config"]["strategy_params"]["objectives"] == "divergence"
    assert c["status"] == "finished"


# --- Shannon diversity ----------------------------------------------------------------


def test_shannon_diversity_against_a_hand_computation():
    # Classes 0, 0, 1, 2: shares 1/2, 1/4, 1/4.
    # H = -(1/2 ln 1/2 + 2 x 1/4 ln 1/4) = 1/2 ln 2 + 1/2 ln 4 = 1.5 ln 2 = 1.0397 nats.
    assert shannon_diversity(np.array([0, 0, 1, 2])) == pytest.approx(1.5 * math.log(2))
    assert shannon_diversity(np.array([2, 1, 0, 0])) == pytest.approx(1.0397208)
    # Ten equal classes: ln 10; one class: exactly 0 (never -0.0); none: no figure.
    assert shannon_diversity(np.arange(10)) == pytest.approx(math.log(10))
    assert str(shannon_diversity(np.array([3, 3, 3]))) == "0.0"
    assert shannon_diversity(np.array([], dtype=int)) is None


def test_shannon_diversity_is_not_the_label_pair_entropy():
    from engine.campaign.triggering import label_entropy

    label, a, b = np.array([1, 1, 1, 1]), np.array([1, 2, 3, 4]), np.array([0, 0, 0, 0])
    assert shannon_diversity(label) == 0.0  # one intended class
    assert label_entropy(a, b) == pytest.approx(2.0)  # four pairs, in bits


# --- geometric diversity: features, subset and draws ------------------------------------


class Counted:
    """features_at over N random feature rows, counting what is asked for."""

    def __init__(self, n: int, dim: int):
        self.rows = torch.randn(n, dim, generator=rng(3))
        self.loaded: list[int] = []

    def __call__(self, idx: np.ndarray) -> torch.Tensor:
        self.loaded += [int(i) for i in idx]
        return self.rows[torch.as_tensor(idx)]


def test_geometric_diversity_averages_the_draws_of_the_subset_size(monkeypatch):
    sizes = []
    real = diversity.log_det
    monkeypatch.setattr(diversity, "log_det", lambda g: sizes.append(len(g)) or real(g))
    data = Counted(60, 32)
    out = geometric_diversity(60, data, GeometricSpec("conv", 10, 7), 0)
    assert sizes == [10] * 7  # 7 draws of 10
    assert out["geometric_subset"] == 10 and out["geometric_draws"] == 7
    assert out["geometric_features"] == "conv" and out["geometric_dim"] == 32
    assert out["geometric_diversity"] < 0 and out["geometric_diversity_sd"] > 0
    # Only the inputs some draw picked were loaded (and one probe for the dimension).
    assert len(set(data.loaded)) <= 1 + 70 and len(data.loaded) <= 1 + 60


def test_geometric_diversity_is_the_mean_of_its_draws_and_repeats_from_its_seed():
    data = Counted(40, 16)
    spec = GeometricSpec("conv", 8, 5)
    a = geometric_diversity(40, data, spec, 1)
    b = geometric_diversity(40, data, spec, 1)
    c = geometric_diversity(40, data, spec, 2)
    assert a == b and a["geometric_diversity"] != c["geometric_diversity"]
    gen = np.random.default_rng(1)
    picks = [np.sort(gen.choice(40, size=8, replace=False)) for _ in range(5)]
    by_hand = np.mean([diversity.log_det_gram(data.rows[p]) for p in picks])
    assert a["geometric_diversity"] == pytest.approx(by_hand)


def test_draws_taken_from_one_gram_matrix_give_the_same_mean():
    # 30 draws of 12 among 20 inputs: one 20 x 20 Gram matrix is cheaper than 30 of 12.
    data = Counted(20, 16)
    out = geometric_diversity(20, data, GeometricSpec("conv", 12, 30), 4)
    gen = np.random.default_rng(4)
    picks = [np.sort(gen.choice(20, size=12, replace=False)) for _ in range(30)]
    by_hand = np.mean([diversity.log_det_gram(data.rows[p]) for p in picks])
    assert out["geometric_draws"] == 30
    assert out["geometric_diversity"] == pytest.approx(by_hand, rel=1e-9)


def test_geometric_subset_is_capped_by_the_inputs_and_by_the_feature_dimension(monkeypatch):
    sizes = []
    real = diversity.log_det
    monkeypatch.setattr(diversity, "log_det", lambda g: sizes.append(len(g)) or real(g))
    # 1,000 asked of 300 inputs with 784-dim features: every input, once (draws would repeat).
    data = Counted(300, 784)
    out = geometric_diversity(300, data, GeometricSpec(), 0)
    assert sizes == [300] and out["geometric_draws"] == 1 and out["geometric_subset"] == 300
    assert out["geometric_diversity_sd"] is None
    # 1,000 asked of 300 inputs with 128-dim features: 30 draws of 128 (a larger Gram
    # matrix would be singular, -inf).
    sizes.clear()
    data = Counted(300, 128)
    out = geometric_diversity(300, data, GeometricSpec(), 0)
    assert sizes == [128] * 30 and out["geometric_subset"] == 128
    assert math.isfinite(out["geometric_diversity"])


def test_no_triggering_input_has_no_geometric_diversity():
    out = geometric_diversity(0, None, GeometricSpec(), 0)
    assert out["geometric_diversity"] is None and out["geometric_subset"] == 0


def test_diffgans_defaults_and_named_feature_extractors():
    assert GeometricSpec() == GeometricSpec("conv", 1000, 30)
    with pytest.raises(ValueError, match="features 'vgg16' unknown"):
        GeometricSpec("vgg16")
    with pytest.raises(ValueError, match="at least 1"):
        GeometricSpec("conv", 0, 30)


def test_the_feature_extractors_read_the_named_layer():
    from engine.classifiers.zoo_nets import ConvNet

    net = ConvNet(in_channels=1, num_classes=10, side=28).eval()

    class Clf:
        module = net

        def logits(self, x):
            return net(x)

    x = torch.rand(3, 1, 28, 28)
    conv = diversity.extractor(Clf(), "conv")(x)
    pen = diversity.extractor(Clf(), "penultimate")(x)
    pix = diversity.extractor(Clf(), "pixels")(x)
    linears = [m for m in net.modules() if isinstance(m, torch.nn.Linear)]
    assert conv.shape == (3, linears[0].in_features)
    assert pen.shape == (3, linears[-1].in_features)
    assert torch.equal(pix, x.flatten(1))
