"""The user's models renamed and deleted (engine/models/manage.py): refused, with nothing
changed, for bundled models, taken names and models that campaigns name; and a
generator's traits read from its card as strategies check them."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from engine.core import home as home_module
from engine.core.errors import LatentfuzzError
from engine.models import zoo
from engine.models.manage import delete_model, generator_traits, rename_model, user_cards
from engine.search.strategies import STRATEGIES
from store import Store, create_campaign
from tests.tiny_data import save_tiny_models


@pytest.fixture
def mine(home: Path, monkeypatch) -> Path:
    """A home with the user's own `pets-vae` and `pets-convnet` (MNIST-shaped)."""
    monkeypatch.setattr(home_module, "_current", home)
    save_tiny_models(home / "models", "mnist", (1, 28, 28), 10, None, prefix="pets")
    return home


def campaign_naming(home: Path, classifier: str, name: str, day: int = 1) -> None:
    """A campaign row as the runner writes it, naming `classifier` as its classifier B."""
    create_campaign(
        Store(home / "latentfuzz.duckdb"),
        {
            "id": f"c-{name.replace(' ', '-')}",
            "name": name,
            "status": "finished",
            "created_at": datetime(2026, 1, day),
            "dataset": "mnist",
            "generator": "mnist-gan",
            "classifier": "mnist-convnet",
            "classifier_b": classifier,
            "strategy": "nsga2",
            "n_seeds": 2,
            "random_seed": 0,
            "config": {},
            "environment": {},
            "dir": "campaigns/x",
        },
    )


def listing(home: Path) -> list[str]:
    return sorted(p.name for p in (home / "models").iterdir())


def test_a_model_is_renamed_with_its_card_and_deleted(mine: Path):
    card = rename_model("pets-convnet", "my-net")
    assert card["name"] == "my-net" and zoo.load_card("my-net")["name"] == "my-net"
    assert listing(mine) == ["my-net", "pets-vae"]  # nothing hidden left behind
    assert [c["name"] for c in user_cards()] == ["my-net", "pets-vae"]
    assert zoo.load_classifier("my-net", "mnist").name == "my-net"
    delete_model("my-net")
    assert listing(mine) == ["pets-vae"]


@pytest.mark.parametrize(
    ("name", "new", "said"),
    [
        ("mnist-convnet", "x", "'mnist-convnet' is a bundled model, which cannot be renamed"),
        ("nope", "x", "you have no model 'nope'; your models: pets-convnet, pets-vae"),
        ("../models/pets-vae", "x", "you have no model '../models/pets-vae'"),
        ("pets-convnet", "pets-vae", "you already have a model 'pets-vae'"),
        ("pets-convnet", "mnist-vae", "'mnist-vae' is a bundled model"),
        ("pets-convnet", "a/../b", "model name 'a/../b' is not a plain name"),
    ],
)
def test_a_rename_that_cannot_be_done_changes_nothing(mine: Path, name, new, said):
    with pytest.raises(LatentfuzzError) as e:
        rename_model(name, new)
    assert said in str(e.value) and "\n" not in str(e.value)
    assert listing(mine) == ["pets-convnet", "pets-vae"]


def test_a_model_campaigns_use_is_neither_renamed_nor_deleted(mine: Path):
    """Campaigns record their models by name: renaming one would leave them naming a model
    that no longer exists."""
    for day, n in enumerate(("one", "two", "three", "four"), 1):
        campaign_naming(mine, "pets-convnet", n, day)
    for act, args in ((rename_model, ("pets-convnet", "other")), (delete_model, ("pets-convnet",))):
        with pytest.raises(LatentfuzzError) as e:
            act(*args)
        said = str(e.value)
        assert "4 campaigns use it (one, two, three and 1 more)" in said
        assert "delete those campaigns first" in said
    assert listing(mine) == ["pets-convnet", "pets-vae"]
    rename_model("pets-vae", "free")  # one no campaign names
    assert listing(mine) == ["free", "pets-convnet"]


def test_a_generator_s_traits_from_its_card_are_what_strategies_check(mine: Path):
    argus = STRATEGIES.get("interpolate")
    for name in ("mnist-vae", "pets-vae", "mnist-gan", "mnist-dm"):
        card = zoo.load_card(name)
        loaded = zoo.load_generator(name) if name != "mnist-dm" else None
        traits = generator_traits(card)
        if loaded is not None:
            assert (traits.has_encoder, traits.conditional) == (
                loaded.has_encoder,
                loaded.conditional,
            )
        assert (argus.check_generator(traits) is None) == name.endswith("vae")
