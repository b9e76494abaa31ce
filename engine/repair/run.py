"""A repair run as a stream of progress events (the CLI prints them, the dashboard will
show them): read the failures, draw the data, fine-tune each arm, write the models, then
measure the parent and every arm (engine/repair/measure.py).

    for event in repair_events(settings):
        print(event["message"])          # event["stage"]: failures | train | model | ...
    report = event["report"]             # the last event's stage is "done"
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from engine.core.errors import ConfigError
from engine.core.home import db_path, resolve_home
from engine.datasets import get_dataset
from engine.models import zoo
from engine.repair import measure, model
from engine.repair.failures import Failures, from_campaign, from_study
from engine.repair.finetune import finetune, parent_module, steps
from engine.repair.mix import draw, mix
from engine.repair.settings import NO_VALIDITY, RANDOM, REPAIR, RepairSettings
from engine.train.loop import resolve_device
from store import Store

Event = dict[str, Any]


def parent_card(name: str) -> dict[str, Any]:
    """The classifier's card, when repair can fine-tune it (a zoo architecture)."""
    card = zoo.load_card(name)
    if card.get("kind") != "classifier":
        raise ConfigError(f"--classifier {name}: a {card.get('kind')}, not a classifier")
    if "architecture" not in card:
        raise ConfigError(
            f"--classifier {name} is an imported {card.get('format', '?')} file; repair "
            "fine-tunes zoo architectures (bundled or `latentfuzz train classifier`) only"
        )
    return card


def default_name(s: RepairSettings) -> str:
    return f"{s.classifier}-repair-{s.campaign or s.study}"


def repair_events(s: RepairSettings, home: str | os.PathLike[str] | None = None) -> Iterator[Event]:
    """Run a repair (see the module doc); yields progress events, the last with the report."""
    t0 = time.perf_counter()
    home = resolve_home(home)
    card = parent_card(s.classifier)
    name = s.name or default_name(s)
    arms = model.names(name, s.controls)
    model.check_free(list(arms.values()))
    dev = resolve_device(s.device)
    dataset = card["dataset"]
    parent = zoo.load_classifier(s.classifier, dataset, str(dev))
    store = Store(db_path(home))
    if s.campaign is not None:
        src = from_campaign(store, home, s.campaign, parent, dataset, s.validators)
    else:
        src = from_study(store, home, s.study, parent)
    n = len(src.valid)
    yield {
        "stage": "failures",
        "message": f"{n} validated failures of {len(src.unfiltered)} that "
        f"{s.classifier} misclassifies in {s.source}",
        "failures": n,
    }
    ds = get_dataset(dataset)
    train, test = ds.load("train"), ds.load("test")
    rng = torch.Generator().manual_seed(s.seed)
    plan = draw(len(test), len(train), n, len(src.unfiltered), s.replay, rng)
    added = {
        REPAIR: (src.valid.floats(), src.valid.labels),
        RANDOM: (test.images[plan.pool_idx], test.labels[plan.pool_idx]),
        NO_VALIDITY: (
            src.unfiltered.take(plan.no_validity_idx).floats(),
            src.unfiltered.labels[plan.no_validity_idx],
        ),
    }
    lineage = {
        "failures": {
            **src.describes,
            "used": n,
            "refs_sha256": model.refs_hash(src.valid.refs),
            **({"calibrated_on": dict(s.calibrated_on)} if s.calibrated_on else {}),
        },
        "settings": {
            "replay_per_failure": s.replay,
            "replayed": len(plan.replay_idx),
            "epochs": s.epochs,
            "lr": s.lr,
            "batch_size": s.batch_size,
            "evaluation_images": len(plan.eval_idx),
            "pool_images": len(plan.pool_idx),
        },
        "seed": s.seed,
        "report": model.REPORT,
    }
    staging = model.staging_folder(name)
    eval_x, eval_y = test.images[plan.eval_idx], test.labels[plan.eval_idx]
    try:
        for arm, model_name in arms.items():
            data = mix(*added[arm], train, plan.replay_idx)
            module = parent_module(card, zoo.model_folder(s.classifier))
            t = time.perf_counter()
            for ev in finetune(module, data, s.epochs, s.lr, s.batch_size, rng, dev):
                yield {
                    "stage": "train",
                    "arm": arm,
                    **ev,
                    "message": f"{arm}: epoch {ev['epoch']}/{ev['epochs']}, loss {ev['loss']:.4f}",
                }
            training = {
                "seed": s.seed,
                "epochs": s.epochs,
                "batch_size": s.batch_size,
                "lr": s.lr,
                "optimizer": "AdamW (constant lr), batch norm statistics frozen",
                "augment_shift_px": 2,
                "train_images": len(data),
                "added_images": data.added,
                "steps_done": steps(data, s.epochs, s.batch_size),
                "seconds": round(time.perf_counter() - t, 1),
                "device": str(dev),
            }
            c = model.card_for(card, model_name, arm, lineage, training, module)
            model.stage(staging, module, c, fp16=card.get("dtype") == "float16")
        # Measured on the stored weights, as every zoo card's accuracy is.
        for model_name in arms.values():
            clf = zoo.load_classifier(model_name, dataset, str(dev), root=staging)
            model.set_metrics(
                staging / model_name,
                {
                    "test_accuracy": measure.accuracy_on(clf, eval_x, eval_y),
                    "test_images": len(eval_y),
                    "test_part": "the test split less the repair's pool (lineage.settings)",
                },
            )
        model.publish(staging, list(arms.values()))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    yield {"stage": "model", "message": f"wrote {', '.join(arms.values())}"}
    yield from _measure(s, home, store, src, arms, parent, added, eval_x, eval_y, lineage, t0)


def _measure(
    s: RepairSettings,
    home: Path,
    store: Store,
    src: Any,
    arms: dict[str, str],
    parent: Any,
    added: dict[str, tuple[torch.Tensor, torch.Tensor]],
    eval_x: torch.Tensor,
    eval_y: torch.Tensor,
    lineage: dict[str, Any],
    t0: float,
) -> Iterator[Event]:
    dataset = zoo.load_card(s.classifier)["dataset"]
    models = {"before": (s.classifier, parent)} | {
        arm: (n, zoo.load_classifier(n, dataset, s.device)) for arm, n in arms.items()
    }
    template = src.template
    run_fresh = template is not None and s.fresh_seeds != 0
    fresh_seed = (
        s.fresh_seed if s.fresh_seed is not None else int((template or {}).get("seed", 0)) + 1
    )
    fresh: Failures | None = None
    rows = []
    for arm, (model_name, clf) in models.items():
        row: dict[str, Any] = {
            "model": arm,
            "name": model_name,
            "held_out_accuracy": measure.accuracy_on(clf, eval_x, eval_y),
            "failures_accuracy": measure.on_failures(clf, src.valid),
        }
        if arm in added:
            row["added_accuracy"] = measure.accuracy_on(clf, *added[arm])
        if run_fresh:
            yield {"stage": "campaign", "message": f"fresh campaign against {model_name}"}
            cfg = measure.fresh_config(
                template,
                model_name,
                fresh_seed,
                s.fresh_seeds,
                s.fresh_generations,
                f"repair {arms[REPAIR]}: fresh campaign against {model_name}",
                s.device,
            )
            cid, figures = measure.run_fresh(cfg, home)
            if fresh is None:  # the first is the parent's: its failures are the unseen ones
                fresh = measure.fresh_failures(store, home, cid, parent, dataset, s.validators)
            row |= {f"fresh_{k}": v for k, v in figures.items()}
        if fresh is not None:
            row["fresh_failures_accuracy"] = measure.on_failures(clf, fresh)
        rows.append(row)
        yield {"stage": "measure", "message": _line(row), "row": row}
    report = {
        "model": arms[REPAIR],
        "parent": s.classifier,
        "source": src.describes,
        "counts": {
            "failures_used": len(src.valid),
            "failures_unfiltered": len(src.unfiltered),
            "added_per_arm": {arm: len(added[arm][1]) for arm in arms},
            "fresh_failures": None if fresh is None else len(fresh),
            "evaluation_images": len(eval_y),
        },
        "lineage": lineage,
        "fresh": {
            "seed": fresh_seed if run_fresh else None,
            "seeds": s.fresh_seeds,
            "generations": s.fresh_generations,
        },
        "rows": rows,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    path = model.write_report(arms[REPAIR], report)
    yield {"stage": "done", "message": f"report: {path}", "report": report}


def _line(row: dict[str, Any]) -> str:
    def pct(v: Any) -> str:
        return "-" if v is None else f"{100 * v:.2f}%"

    text = (
        f"{row['model']} ({row['name']}): held-out {pct(row['held_out_accuracy'])}, "
        f"failures used {pct(row['failures_accuracy'])}"
    )
    if "fresh_failures_accuracy" in row:
        text += f", fresh failures {pct(row['fresh_failures_accuracy'])}"
    if "fresh_misclassified_pct" in row:
        m = row["fresh_misclassified_pct"]
        text += f", new campaign misclassified {'-' if m is None else f'{m:.1f}%'}"
    return text
