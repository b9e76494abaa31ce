"""Zoo classifiers run as an optimised graph on the CPU: the same logits as the eager module
at every batch size, hooks where they are needed, eager where a graph would be wrong."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from engine.campaign import batching
from engine.campaign.triggering import penultimate
from engine.classifiers import ARCHITECTURES, inference
from engine.classifiers.base import ModuleClassifier
from engine.datasets import get_dataset
from engine.models import zoo

pytestmark = pytest.mark.skipif(
    not torch.backends.mkldnn.is_available(), reason="this torch build has no oneDNN"
)


def classifier(arch: str, shape=(1, 28, 28)) -> ModuleClassifier:
    torch.manual_seed(0)
    net = ARCHITECTURES.get(arch)(shape[0], 10, shape[1]).eval()
    return ModuleClassifier(net, shape, 10, name=arch, optimise=True)


@pytest.mark.parametrize("arch", sorted(ARCHITECTURES.names()))
@pytest.mark.parametrize("shape", [(1, 28, 28), (3, 32, 32)])
def test_every_architecture_runs_as_a_graph_with_the_eager_logits(arch, shape):
    clf = classifier(arch, shape)
    x = torch.rand(64, *shape, generator=torch.Generator().manual_seed(1))
    for n in (1, 5, 64):  # the trace's batch of 2 is not baked into the graph
        with torch.inference_mode():
            got = clf.logits(x[:n])
            with inference.eager_only():
                want = clf.logits(x[:n])
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert isinstance(clf._graph, torch.jit.ScriptModule), f"{arch} fell back to eager"


def test_the_bundled_classifier_is_a_graph_and_predicts_as_the_eager_module():
    clf = zoo.load_classifier("mnist-convnet", "mnist")
    x = get_dataset("mnist").load("test").images[:500]
    with torch.inference_mode():
        a = clf.logits(x)
        with inference.eager_only():
            b = clf.logits(x)
    assert isinstance(clf._graph, torch.jit.ScriptModule)
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    assert (a.argmax(1) == b.argmax(1)).all()


class ShapeBranch(nn.Module):
    """Differs between the trace's batch and any other: a trace would freeze the branch."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x.flatten(1))
        return y * 0 if x.shape[0] == inference.TRACE_BATCH else y


def test_a_graph_that_differs_from_the_module_is_not_used():
    clf = ModuleClassifier(ShapeBranch().eval(), (1, 2, 2), 3, name="branchy", optimise=True)
    x = torch.rand(3, 1, 2, 2, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        got = clf.logits(x)
    assert clf._graph is False
    torch.testing.assert_close(got, clf.module(x))


def test_building_draws_nothing_from_torch_and_moving_drops_the_graph():
    clf = classifier("convnet")
    state = torch.random.get_rng_state()
    with torch.inference_mode():
        clf.logits(torch.zeros(2, 1, 28, 28))
    assert torch.equal(state, torch.random.get_rng_state())
    assert isinstance(clf._graph, torch.jit.ScriptModule)
    clf.to("cpu")
    assert clf._graph is None  # built again for the device it is on
    assert not any(p.requires_grad is False for p in clf.module.parameters()), (
        "the eager module's parameters were changed to freeze a copy"
    )


def test_only_zoo_modules_are_optimised():
    plain = ModuleClassifier(ARCHITECTURES.get("convnet")().eval(), (1, 28, 28), 10, name="x")
    with torch.inference_mode():
        plain.logits(torch.zeros(2, 1, 28, 28))
    assert plain._graph is None


def test_hooks_still_see_the_layers_where_code_reads_them():
    clf = classifier("convnet")
    x = torch.rand(6, 1, 28, 28, generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        clf.logits(x)  # the graph is built and used first
    feats = penultimate(clf, x)
    last = [m for m in clf.module.modules() if isinstance(m, nn.Linear)][-1]
    assert feats.shape == (6, last.in_features)

    class Gen:
        latent_shape, conditional, device = (8,), False, torch.device("cpu")

        def _decode(self, z, _labels):
            return torch.sigmoid(z.sum(1, keepdim=True)).expand(-1, 784).reshape(-1, 1, 28, 28)

    fn = batching.raw_forward(Gen(), clf, 4)
    assert batching.item_bytes(fn, [clf.module], 4 * 784) > 64 * 4 * 784


def test_a_graph_built_in_one_grad_mode_serves_the_other():
    x = torch.rand(4, 1, 28, 28, generator=torch.Generator().manual_seed(3))
    modes = (torch.inference_mode, torch.no_grad)
    for first, then in (modes, modes[::-1]):
        clf = classifier("convnet")
        with first():
            a = clf.logits(x)
        with then():
            b = clf.logits(x)
        assert isinstance(clf._graph, torch.jit.ScriptModule)
        torch.testing.assert_close(a, b)


def test_an_imported_torchscript_classifier_runs_as_given(tmp_path):
    net = torch.jit.script(ARCHITECTURES.get("lenet5")().eval())
    path = tmp_path / "lenet.pt"
    net.save(str(path))
    clf = zoo.load_classifier(str(path), "mnist")
    with torch.inference_mode():
        clf.logits(torch.zeros(2, 1, 28, 28))
    assert not clf.optimise and clf._graph is None


def test_a_campaign_run_eagerly_resumes_eagerly_and_new_ones_record_the_graphs(tmp_path):
    import json

    from engine.campaign.config import parse_config
    from engine.campaign.resume import resume_campaign
    from engine.campaign.runner import run_campaign
    from store import Store
    from store import campaigns as sc

    raw = {"seeds": 3, "seed": 4, "batch_size": 64, "strategy_params": {"generations": 6}}

    def stop_at_3(p) -> None:
        if p.generation == 3:
            raise KeyboardInterrupt

    # A campaign of the version before graphs: eager, and no "inference" in its record.
    with inference.eager_only():
        whole = run_campaign(parse_config(raw), tmp_path / "a").campaign_id
        cut = run_campaign(parse_config(raw), tmp_path / "b", progress=stop_at_3)
    b = Store(tmp_path / "b" / "latentfuzz.duckdb")
    env = sc.campaign(b, cut.campaign_id)["environment"]
    del env["inference"]
    with b.write() as con:
        con.execute(
            "UPDATE campaigns SET environment = ? WHERE id = ?", [json.dumps(env), cut.campaign_id]
        )
    assert cut.status == "interrupted"
    # Replayed through the graph, its stored best fitness would not match to the last bit.
    assert resume_campaign(tmp_path / "b", cut.campaign_id).status == "finished"
    a = sc.generations(Store(tmp_path / "a" / "latentfuzz.duckdb"), whole)
    r = sc.generations(b, cut.campaign_id)
    assert a["best_fitness"].tolist() == r["best_fitness"].tolist()
    new = run_campaign(parse_config(raw), tmp_path / "c").campaign_id
    env = sc.campaign(Store(tmp_path / "c" / "latentfuzz.duckdb"), new)["environment"]
    assert env["inference"] == inference.PATH
