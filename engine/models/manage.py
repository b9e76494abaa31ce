"""The user's own models of a home: rename and delete them (the Models page), and see a
generator's traits from its card without loading its weights (the New campaign form).

A campaign records its models by name (the store's `campaigns.generator`, `classifier`,
`classifier_b`, and its config): renaming or deleting a model that a campaign names would
leave that campaign unresumable and its seed details unreadable. So both are refused while
any campaign of the home names the model; the refusal lists them and says how to go on.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from engine.core.errors import ConfigError
from engine.core.home import current_home, db_path
from engine.generators import GENERATORS, Generator
from engine.models import zoo
from engine.models.importing import check_name
from store import Store
from store.model_use import campaigns_using

#: Campaigns named in a refusal at most; the rest are counted.
SHOWN = 3


def users_model(name: str) -> Path:
    """The folder of the user's own model ``name``; a one-line ConfigError for a bundled
    model (read-only) or a name that is not one of the user's."""
    if zoo.is_bundled(name):
        raise ConfigError(
            f"{name!r} is a bundled model, which cannot be renamed or deleted; only your own "
            "models (imported, uploaded or trained into this home) can"
        )
    folder = zoo.user_models_dir() / name
    if not name or "/" in name or "\\" in name or not (folder / zoo.CARD).is_file():
        known = ", ".join(c["name"] for c in user_cards()) or "none yet"
        raise ConfigError(f"you have no model {name!r}; your models: {known}")
    return folder


def user_cards() -> list[dict[str, Any]]:
    """The cards of the user's own models (not the bundled zoo), by name."""
    return sorted(
        (c for c in zoo.list_cards() if not zoo.is_bundled(c["name"])), key=lambda c: c["name"]
    )


def used_by(name: str, home: Path | None = None) -> list[dict]:
    """The campaigns of the home whose generator or classifier (A or B) is ``name``."""
    path = db_path(home or current_home())
    return campaigns_using(Store(path), name) if path.is_file() else []


def _refuse_if_used(name: str, doing: str) -> None:
    using = used_by(name)
    if not using:
        return
    shown = ", ".join(str(c["name"] or c["id"]) for c in using[:SHOWN])
    more = f" and {len(using) - SHOWN} more" if len(using) > SHOWN else ""
    n = len(using)
    raise ConfigError(
        f"cannot {doing} {name}: {n} campaign{'s use' if n > 1 else ' uses'} it ({shown}"
        f"{more}) and would no longer find it; delete those campaigns first, or import the "
        "file again under another name"
    )


def rename_model(name: str, new_name: str) -> dict[str, Any]:
    """Rename the user's model ``name`` to ``new_name`` (folder and card); returns the new
    card. Refused, with nothing changed, for a bundled model, a taken or unsafe name, or
    a model that campaigns use."""
    folder = users_model(name)
    if new_name == name:
        return zoo.load_card(name)
    check_name(new_name, replace=False)
    _refuse_if_used(name, "rename")
    card = {**json.loads((folder / zoo.CARD).read_text()), "name": new_name}
    # Moved aside under a hidden name first: no listing sees the folder while its card
    # still has the old name, and a failure puts it back.
    aside = folder.with_name(f".renaming-{secrets.token_hex(4)}")
    folder.rename(aside)
    try:
        tmp = aside / f"{zoo.CARD}.tmp"
        tmp.write_text(json.dumps(card, indent=2) + "\n")
        os.replace(tmp, aside / zoo.CARD)
        aside.rename(folder.with_name(new_name))
    except BaseException:
        (aside / f"{zoo.CARD}.tmp").unlink(missing_ok=True)
        old = {**card, "name": name}
        (aside / zoo.CARD).write_text(json.dumps(old, indent=2) + "\n")
        aside.rename(folder)
        raise
    return card


def delete_model(name: str) -> None:
    """Delete the user's model ``name`` and its files. Refused, with nothing changed, for
    a bundled model or one that campaigns use."""
    folder = users_model(name)
    _refuse_if_used(name, "delete")
    aside = folder.with_name(f".deleting-{secrets.token_hex(4)}")
    folder.rename(aside)  # gone from every listing at once, even if the removal is cut short
    shutil.rmtree(aside, ignore_errors=True)


def generator_traits(card: dict[str, Any]) -> SimpleNamespace:
    """What a strategy's ``check_generator`` reads of a generator (family, has_encoder,
    conditional), from its card alone: the form asks at every choice, and loading a
    diffusion model's weights for that took seconds."""
    cls = GENERATORS.get(card["family"])
    conditional = (card.get("params") or {}).get("conditional", cls.conditional)
    return SimpleNamespace(
        family=card["family"],
        has_encoder=cls._encode is not Generator._encode,
        conditional=bool(conditional),
    )
