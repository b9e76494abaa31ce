"""Model selection from differential results (DiffGAN's RQ4): which of two classifiers to
trust, input by input.

A differential campaign archives triggering inputs: images its classifiers A and B label
differently. Each has a verdict of who is right, the generator's intended label (the
archive's ``label``; only inputs valid under the campaign's validity filters are used by
default), or people's (a validity study of the triggering inputs, ``people_labels``).
The selector is a random forest over the two classifiers' softmax vectors, concatenated
(2K features), trained on the inputs where exactly one of them is right to predict which
one; inputs where both are wrong teach it nothing about whom to trust.

The selected ensemble answers A's label where A and B agree, and the label of the
classifier the selector picks where they differ. It is measured on:

- held-out triggering inputs of the training campaign (selection accuracy), split by
  seed so that near copies of one search never fall on both sides;
- the dataset's test split (accuracy of A, B and the ensemble);
- a fresh campaign's triggering inputs (another seed): the same three accuracies.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine.core.errors import LatentfuzzError
from engine.core.untrusted import inside, quote

#: Share of a campaign's seeds whose inputs are held out to measure selection accuracy.
HELD_OUT = 0.3
#: Trees of the random forest (scikit-learn's default).
TREES = 100
#: Labels of the selector's two answers.
A, B = 0, 1


@dataclass(frozen=True)
class Outputs:
    """Both classifiers' softmax outputs on some images, with who is right.

    Attributes:
        pa, pb: (N, K) softmax vectors of A and B.
        label: (N,) the true (intended) class.
        group: (N,) the search (seed index) an input came from; -1 for the test split.
    """

    pa: np.ndarray
    pb: np.ndarray
    label: np.ndarray
    group: np.ndarray

    def __len__(self) -> int:
        return len(self.label)

    @property
    def pred_a(self) -> np.ndarray:
        return self.pa.argmax(1)

    @property
    def pred_b(self) -> np.ndarray:
        return self.pb.argmax(1)

    def who(self) -> np.ndarray:
        """(N,) A where only A is right, B where only B is, -1 otherwise."""
        a_ok, b_ok = self.pred_a == self.label, self.pred_b == self.label
        return np.where(a_ok & ~b_ok, A, np.where(b_ok & ~a_ok, B, -1))

    def take(self, mask: np.ndarray) -> Outputs:
        return Outputs(self.pa[mask], self.pb[mask], self.label[mask], self.group[mask])


def features(o: Outputs) -> np.ndarray:
    """(N, 2K): A's softmax vector, then B's."""
    return np.concatenate([o.pa, o.pb], axis=1)


class Selector:
    """A random forest that answers, per input, which classifier to trust (A or B)."""

    def __init__(self, seed: int = 0, trees: int = TREES) -> None:
        self.seed, self.trees = seed, trees
        self.forest: Any = None
        self.only: int | None = None  # one classifier was right on every training input
        self.trained_on = 0

    def fit(self, o: Outputs) -> Selector:
        """Train on the inputs of ``o`` where exactly one classifier is right."""
        # Deferred (start-up time: scikit-learn's import is about a second).
        from sklearn.ensemble import RandomForestClassifier

        who = o.who()
        keep = who >= 0
        self.trained_on = int(keep.sum())
        if self.trained_on == 0:
            raise LatentfuzzError(
                f"no input to learn from: of {len(o)} triggering inputs, none has exactly one "
                "classifier right; run a longer differential campaign (more seeds or "
                "evaluations) or include invalid inputs (--all-inputs)"
            )
        classes = np.unique(who[keep])
        if len(classes) == 1:
            self.only = int(classes[0])
            return self
        self.forest = RandomForestClassifier(
            n_estimators=self.trees, random_state=self.seed, n_jobs=1
        ).fit(features(o)[keep], who[keep])
        return self

    def choose(self, o: Outputs) -> np.ndarray:
        """(N,) A or B: the classifier to trust on each input."""
        if self.only is not None:
            return np.full(len(o), self.only)
        if len(o) == 0:
            return np.zeros(0, dtype=int)
        return self.forest.predict(features(o))

    def predict(self, o: Outputs) -> np.ndarray:
        """(N,) the ensemble's labels: A's where A and B agree, the chosen one's elsewhere
        (the selector is asked only where they differ)."""
        pred = o.pred_a.copy()
        differ = pred != o.pred_b
        if differ.any():
            pick_b = self.choose(o.take(differ)) == B
            pred[np.flatnonzero(differ)[pick_b]] = o.pred_b[differ][pick_b]
        return pred


def selection_accuracy(sel: Selector, o: Outputs) -> tuple[float | None, int]:
    """(share of the inputs with exactly one classifier right where the selector picks
    that one, how many such inputs); None when there are none."""
    who = o.who()
    keep = who >= 0
    n = int(keep.sum())
    if n == 0:
        return None, 0
    return float((sel.choose(o.take(keep)) == who[keep]).mean()), n


def accuracies(sel: Selector, o: Outputs) -> dict[str, Any]:
    """Accuracy of A alone, B alone and the selected ensemble on ``o``, with its size."""
    n = len(o)
    acc = (lambda p: float((p == o.label).mean())) if n else (lambda p: None)
    return {"n": n, "a": acc(o.pred_a), "b": acc(o.pred_b), "selected": acc(sel.predict(o))}


def split_by_group(o: Outputs, seed: int, share: float = HELD_OUT) -> tuple[Outputs, Outputs]:
    """(training, held-out) inputs: a seeded share of the searches (groups) held out whole,
    at least one and at most all but one."""
    groups = np.unique(o.group)
    if len(groups) < 2:
        raise LatentfuzzError(
            f"held-out selection accuracy needs triggering inputs from at least 2 searches; "
            f"this campaign's come from {len(groups)}; run it with more seeds"
        )
    k = min(max(1, round(share * len(groups))), len(groups) - 1)
    held = np.random.default_rng(seed).permutation(groups)[:k]
    mask = np.isin(o.group, held)
    return o.take(~mask), o.take(mask)


def softmax_of(clf: Any, x: torch.Tensor, chunk: int = 512) -> np.ndarray:
    """(N, K) softmax of a classifier's logits on float images in [0, 1]."""
    with torch.inference_mode():
        parts = [
            torch.softmax(clf.logits(x[i : i + chunk]).float(), 1) for i in range(0, len(x), chunk)
        ]
    return torch.cat(parts).numpy() if parts else np.zeros((0, clf.num_classes), np.float32)


def campaign_pair(store: Any, cid: str) -> dict[str, Any]:
    """A differential campaign's row, or a one-line error saying why it is not one."""
    # Deferred (start-up time: loads DuckDB and pandas).
    from store import campaigns as sc

    row = sc.campaign(store, cid)
    if row is None:
        raise LatentfuzzError(f"no campaign {quote(cid)}; `latentfuzz campaigns` lists them")
    if not row.get("classifier_b"):
        raise LatentfuzzError(
            f"campaign {cid} tests one classifier ({row['classifier']}); select needs a "
            "differential campaign: `latentfuzz run --strategy nsga2 --classifier-b NAME`"
        )
    return row


def people_labels(store: Any, study_id: str) -> dict[tuple[str, int], int]:
    """People's verdicts from a validity study of triggering inputs (`labels create
    --triggering`): (campaign, archive entry) -> the class they give, A's or B's label
    under the study's rule, or -1 when they give neither (both classifiers wrong). Only
    complete items judged valid count; undecided ones are left out."""
    # Deferred (start-up time: loads the labelling statistics and DuckDB).
    from engine.labelling import agreement
    from engine.labelling.statistics import load

    s, v, _ = load(store, study_id)
    t = v[(v["kind"] == "triggering") & v["complete"]] if "kind" in v else v.iloc[:0]
    out: dict[tuple[str, int], int] = {}
    for it in t.itertuples():
        if it.validity is not True or not str(it.external_id).startswith("archive:"):
            continue
        a = agreement.preservation(it.answers, int(it.predicted), s["rule"])
        b = agreement.preservation(it.answers, int(it.predicted_b), s["rule"])
        said = int(it.predicted) if a else int(it.predicted_b) if b else None
        if said is None and a is False and b is False:
            said = -1
        if said is not None:
            out[(it.campaign_id, int(str(it.external_id).split(":", 1)[1]))] = said
    return out


def triggering_outputs(
    store: Any,
    home: Path,
    cid: str,
    models: tuple[Any, Any],
    valid_only: bool = True,
    people: dict[tuple[str, int], int] | None = None,
) -> Outputs:
    """Both classifiers' outputs on a campaign's archived triggering inputs (valid ones
    only by default), re-read from their PNGs; the inputs A and B no longer label
    differently once stored as 8-bit images are left out. With ``people``
    (``people_labels``), only the inputs people judged, with their verdict as the label."""
    # Deferred (start-up time: loads DuckDB and pandas).
    from engine.core.images import read_uint8
    from store import differential as sd

    df = sd.archive(store, cid)
    df = df[df["pred_b"].notna()]
    if people is not None:
        said = df["entry"].map(lambda e: people.get((cid, int(e))))
        df = df[said.notna()].assign(label=said[said.notna()].astype(int))
    elif valid_only:
        df = df[df["valid"]]
    paths = [inside(home, p, "archive.image", source=f"campaign {cid}") for p in df["image"]]
    if not paths:
        k = models[0].num_classes
        empty = np.zeros((0, k), np.float32)
        return Outputs(empty, empty, np.zeros(0, int), np.zeros(0, int))
    x = torch.from_numpy(np.stack([read_uint8(p) for p in paths])).float() / 255.0
    o = Outputs(
        softmax_of(models[0], x),
        softmax_of(models[1], x),
        df["label"].to_numpy(int),
        df["seed_idx"].to_numpy(int),
    )
    return o.take(o.pred_a != o.pred_b)


def split_outputs(dataset: Any, models: tuple[Any, Any]) -> Outputs:
    """Both classifiers' outputs on the dataset's test split."""
    test = dataset.load("test")
    y = test.labels.numpy()
    return Outputs(
        softmax_of(models[0], test.images),
        softmax_of(models[1], test.images),
        y,
        np.full(len(y), -1),
    )


def run_selection(
    campaigns: list[str],
    fresh: list[str],
    home: Path | None = None,
    valid_only: bool = True,
    seed: int = 0,
    study: str | None = None,
) -> list[dict[str, Any]]:
    """Train a selector on each of ``campaigns``' triggering inputs and measure it (see the
    module doc); one row per training campaign. Every campaign must test the same pair
    (A, B) on one dataset, checked before any model loads. With ``study``, every
    campaign's inputs are those people judged in that study, labelled by their verdict."""
    # Deferred (start-up time: loads the dataset readers, the zoo and DuckDB).
    from engine.core.home import db_path, resolve_home
    from engine.datasets import get_dataset
    from engine.models import zoo
    from store import Store

    h = resolve_home(home)
    store = Store(db_path(h))
    rows = {c: campaign_pair(store, c) for c in dict.fromkeys([*campaigns, *fresh])}
    pair = {(r["classifier"], r["classifier_b"], r["dataset"]) for r in rows.values()}
    if len(pair) > 1:
        said = "; ".join(f"{c}: {r['classifier']} vs {r['classifier_b']}" for c, r in rows.items())
        raise LatentfuzzError(
            f"the campaigns test different pairs ({said}); a selector chooses between "
            "one pair: give campaigns of the same classifiers and dataset"
        )
    (a_ref, b_ref, dataset) = pair.pop()
    people = people_labels(store, study) if study is not None else None
    if people is not None:
        none = [c for c in rows if not any(k[0] == c for k in people)]
        if none:
            raise LatentfuzzError(
                f"study {quote(study)} has no decided verdict on a triggering input of "
                f"campaign {none[0]}; label its inputs (`latentfuzz labels create --campaign "
                f"{none[0]} --triggering`) or leave --study out to use the generator's labels"
            )
    ds = get_dataset(dataset)
    models = (zoo.load_classifier(a_ref, dataset), zoo.load_classifier(b_ref, dataset))
    outs = {c: triggering_outputs(store, h, c, models, valid_only, people) for c in rows}
    test = split_outputs(ds, models)
    out = []
    for cid in campaigns:
        o = outs[cid]
        train, held = split_by_group(o, seed)
        sel_acc, sel_n = selection_accuracy(Selector(seed).fit(train), held)
        # The forest against "always trust the classifier right more often in training".
        t_who, h_who = train.who(), held.who()
        majority = B if (t_who == B).sum() > (t_who == A).sum() else A
        h_one = h_who[h_who >= 0]
        base = float((h_one == majority).mean()) if len(h_one) else None
        full = Selector(seed).fit(o)  # held-out figures measured, it learns from all
        who = o.who()
        row: dict[str, Any] = {
            "campaign": cid,
            "strategy": rows[cid]["strategy"],
            "verdicts": f"people (study {study})" if study else "generator's label",
            "classifier": a_ref,
            "classifier_b": b_ref,
            "inputs": len(o),
            "only_a_right": int((who == A).sum()),
            "only_b_right": int((who == B).sum()),
            "both_wrong": int((who < 0).sum()),
            "held_out_selection": sel_acc,
            "held_out_n": sel_n,
            "held_out_majority": base,
            "majority": "A" if majority == A else "B",
            **{f"test_{k}": v for k, v in accuracies(full, test).items()},
            "test_disagree": int((test.pred_a != test.pred_b).sum()),
        }
        for j, f in enumerate(fresh):
            acc = accuracies(full, outs[f])
            row.update({f"fresh{j}_{k}": v for k, v in acc.items()})
            row[f"fresh{j}_campaign"] = f
            row[f"fresh{j}_strategy"] = rows[f]["strategy"]
            row[f"fresh{j}_selection"] = selection_accuracy(full, outs[f])[0]
        out.append(row)
    return out
