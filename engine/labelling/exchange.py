"""latentfuzz's own study files: what `labels export` writes and `labels import` reads back.

Two shapes, both carrying the study's rule, k, seed and resamples on every row (a CSV has
no other place for them, and the report's verdicts and intervals depend on them):

- wide: one row per image, every image of the study; its answers as texts in order
  (`answer 1`, `labeller 1`, ...), the adjudication that settled it, and the verdicts.
- raw: one row per judgement, with its labeller, times and the item it is about; images
  nobody answered yet are not in it.

Imported, either gives a study whose report is the exported study's: items keep their kind
(gold stays gold, so it scores labellers and counts in no result), answers keep their
labeller and order, adjudications are kept, and the file's own verdict columns are
cross-checked against the recomputed ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import pandas as pd

from engine.core.csv_io import restore_cell
from engine.core.errors import ConfigError
from engine.datasets import Dataset, get_dataset
from engine.labelling.agreement import INVALID, OTHER, UNSURE
from engine.labelling.statistics import load
from engine.labelling.validity import answer_text
from store import Store
from store import labels as label_store

STUDY_COLUMNS = ["study_rule", "study_k", "study_seed", "study_resamples"]
MAX_RESAMPLES = 100_000  # a bootstrap of more takes minutes at every report
_BIG = 2**31  # the store's INTEGER columns
KINDS = {"result", "seed", "gold", "triggering", "imported"}
_ANSWER = re.compile(r"answer (\d+)")


def _study_columns(s: dict) -> dict:
    """The study's own settings, on every row of an export."""
    # A study given no name is named by its id, which means nothing once imported.
    name = s["name"] if s["name"] != s["id"] else None
    return {
        "study_name": name,
        "study_dataset": s["dataset"],
        "study_rule": s["rule"],
        "study_k": int(s["k"]),
        "study_seed": int(s["seed"]),
        "study_resamples": int(s["resamples"]),
    }


def _adjudications(store: Store, study_id: str, ds: Dataset) -> pd.DataFrame:
    a = label_store.adjudications(store, study_id)
    return pd.DataFrame(
        {
            "item_id": a["item_id"],
            "adjudication": [answer_text(int(x), ds.class_names, ds.domain) for x in a["answer"]],
            "adjudicated_by": a["reviewer"],
            "adjudication_note": a["note"],
            "adjudicated_at": a["decided_at"],
        }
    )


def raw_export(store: Store, study_id: str) -> pd.DataFrame:
    """One row per judgement, with the item it is about."""
    s, v, j = load(store, study_id)
    ds = get_dataset(s["dataset"])
    out = j.merge(v.drop(columns=["answers"]), on=["study_id", "item_id"])
    out["answer_text"] = [answer_text(int(a), ds.class_names, ds.domain) for a in out["answer"]]
    out = out.merge(_adjudications(store, study_id, ds), on="item_id", how="left")
    return out.assign(**_study_columns(s))


def wide_export(store: Store, study_id: str) -> pd.DataFrame:
    """One row per image: what it is, each answer and its labeller in the order given, the
    adjudication and the verdicts."""
    s, v, j = load(store, study_id)
    ds = get_dataset(s["dataset"])
    width = max([int(s["k"]), *v["n_answers"]])
    who = j.groupby("item_id")["labeller"].apply(list).to_dict() if len(j) else {}
    wide = v.drop(columns=["answers"]).copy()
    for i in range(width):
        col = [a[i] if i < len(a) else None for a in v["answers"]]
        wide[f"answer {i + 1}"] = [
            None if a is None else answer_text(int(a), ds.class_names, ds.domain) for a in col
        ]
        wide[f"labeller {i + 1}"] = [
            (who.get(item, [])[i : i + 1] or [None])[0] for item in v["item_id"]
        ]
    wide = wide.merge(_adjudications(store, study_id, ds), on="item_id", how="left")
    return wide.assign(**_study_columns(s))


# ------------------------------------------------------------------------------- import


def detect(columns: list[str]) -> str | None:
    """'wide' or 'raw' where the header is one of our exports, else None."""
    cols = set(columns)
    if not {"item_id", "kind", "generator", "preset", "image", "expected"} <= cols:
        return None
    if {"labeller", "answer"} <= cols:
        return "raw"
    return "wide" if any(_ANSWER.fullmatch(c) for c in cols) else None


@dataclass
class Exchange:
    """A study file read back: what create_study takes, and the study's settings."""

    items: pd.DataFrame
    judgements: pd.DataFrame
    adjudications: pd.DataFrame
    k: int
    rule: str
    seed: int
    resamples: int
    verdict_rows: pd.DataFrame  # one row per item, in items' order, for the cross-check
    assumed: str  # the settings the file did not carry, in words ("" when it had them all)
    name: str | None  # the exported study's name


def read(df: pd.DataFrame, shape: str, ds: Dataset, parse) -> Exchange:
    """The study in df (all strings, as read_table gives), checked row by row; `parse`
    turns an answer text into a class index or marker (label_import.parse_answer)."""
    df = df.map(restore_cell)
    made_for = df["study_dataset"].iloc[0].strip() if "study_dataset" in df.columns else ""
    if made_for and made_for != ds.name:  # its classes were read as another dataset's
        raise ConfigError(
            f"the study was made for dataset {made_for}, not {ds.name}; "
            f"import it with --dataset {made_for}"
        )
    line = {i: n + 1 for n, i in enumerate(df.index)}  # data row numbers, for errors
    try:
        old_ids = [_whole(df.at[i, "item_id"], "item_id", True) for i in df.index]
    except ConfigError as e:
        raise ConfigError(f"{e}; the file's item_id column must hold whole numbers") from None
    df = df.assign(_item=old_ids)
    firsts = df.drop_duplicates("_item").sort_values("_item", kind="stable")
    if shape == "wide" and len(firsts) != len(df):
        dup = df.index[df["_item"].duplicated()][0]
        raise ConfigError(
            f"data row {line[dup]}: item_id {df.at[dup, 'item_id']} appears twice; "
            "a wide export has one row per image"
        )
    new_id = {old: new for new, old in enumerate(firsts["_item"])}
    items = []
    for i, r in firsts.iterrows():
        try:
            items.append(_item(r, new_id[r["_item"]], ds))
        except ConfigError as e:
            raise ConfigError(f"data row {line[i]} (item_id {r['item_id']}): {e}") from None
    items_df = pd.DataFrame(items)
    if shape == "raw":
        judged, adjudicated = _raw_answers(df, new_id, ds, line)
    else:
        judged, adjudicated = _wide_answers(df, new_id, ds, parse, line)
    for i, r in firsts.iterrows():
        if not (text := r.get("adjudication", "").strip()):
            continue
        try:
            adjudicated.append(
                {
                    "item_id": new_id[r["_item"]],
                    "answer": parse(text),
                    "reviewer": r.get("adjudicated_by", "").strip() or "imported",
                    "note": r.get("adjudication_note", ""),
                    "decided_at": _time(r.get("adjudicated_at", "")) or datetime.now(),
                }
            )
        except ConfigError as e:
            raise ConfigError(f"data row {line[i]}, adjudication: {e}") from None
    j = pd.DataFrame(judged, columns=label_store.JUDGEMENT_COLUMNS[1:])
    per_item = j.groupby("item_id").size()
    settings, assumed = _settings(df, int(per_item.max()) if len(per_item) else 1, shape)
    if shape == "wide" and not any(c.startswith("labeller ") for c in df.columns):
        assumed = ", ".join(filter(None, [assumed, "labellers named by answer column"]))
    adj = pd.DataFrame(adjudicated, columns=["item_id", "reviewer", "answer", "note", "decided_at"])
    verdict_rows = firsts.reindex(columns=["item_id", "validity", "preservation"])
    name = (df["study_name"].iloc[0].strip() or None) if "study_name" in df.columns else None
    return Exchange(items_df, j, adj, *settings, verdict_rows, assumed, name)


def _whole(text: str, col: str, required: bool = False, limit: int = _BIG) -> int | None:
    t = str(text).strip()
    if not t:
        if required:
            raise ConfigError(f"column {col} is empty")
        return None
    try:
        f = float(t)
    except ValueError:
        f = float("nan")
    if not f.is_integer():
        raise ConfigError(f"column {col} holds {t!r}, not a whole number")
    if abs(f) >= limit:
        raise ConfigError(f"column {col} holds {t!r}, beyond the {limit - 1:,} it may hold")
    return int(f)


def _item(r: pd.Series, item_id: int, ds: Dataset) -> dict:
    kind = r["kind"].strip()
    if kind not in KINDS:
        raise ConfigError(f"kind {kind!r} is not one of {', '.join(sorted(KINDS))}")
    out = {"item_id": item_id, "kind": kind}
    for c in ("campaign_id", "generator", "preset", "image", "external_id"):
        out[c] = (r.get(c) or "").strip() or None
    for c in ("seed_idx", "expected", "predicted", "iterations", "predicted_b"):
        out[c] = _whole(r.get(c, ""), c, c == "expected")
    for c in ("expected", "predicted", "predicted_b"):
        if out[c] is not None and not 0 <= out[c] < ds.num_classes:
            raise ConfigError(
                f"{c} {out[c]} is not a class index of {ds.name} (0 to {ds.num_classes - 1}); "
                "pick the --dataset it was made for"
            )
    return out


def _raw_answers(df, new_id, ds, line) -> tuple[list[dict], list[dict]]:
    judged, seen = [], set()
    for i, r in df.iterrows():
        item, who = new_id[r["_item"]], r["labeller"].strip()
        try:
            a = _whole(r["answer"], "answer", True)
        except ConfigError as e:
            raise ConfigError(f"data row {line[i]}: {e}") from None
        if not (a in (INVALID, UNSURE, OTHER) or 0 <= a < ds.num_classes) or not who:
            raise ConfigError(
                f"data row {line[i]}: answer {r['answer']!r} by {who!r} is not a class index "
                f"of {ds.name} (0 to {ds.num_classes - 1}) or a marker ({INVALID} invalid, "
                f"{UNSURE} unsure, {OTHER} another class) with a labeller"
            )
        if (item, who) in seen:  # the store keeps one answer per labeller and image
            raise ConfigError(f"data row {line[i]}: {who!r} answers item_id {r['item_id']} twice")
        seen.add((item, who))
        try:
            judged.append(
                {
                    "item_id": item,
                    "labeller": who,
                    "answer": a,
                    "raw": r.get("raw") or None,
                    "position": _whole(r.get("position", ""), "position"),
                    "shown_at": _time(r.get("shown_at", "")),
                    "answered_at": _time(r.get("answered_at", "")) or datetime.now(),
                    "seconds": _number(r.get("seconds", "")),
                }
            )
        except ConfigError as e:
            raise ConfigError(f"data row {line[i]}: {e}") from None
    return judged, []


def _wide_answers(df, new_id, ds, parse, line) -> tuple[list[dict], list[dict]]:
    cols = sorted((int(m.group(1)), c) for c in df.columns if (m := _ANSWER.fullmatch(c)))
    judged, now = [], datetime.now()
    sequence: dict[str, int] = {}  # a labeller's answers so far: `position` is their order
    for i, r in df.iterrows():
        names = []
        for n, col in cols:
            if not (text := r[col].strip()):
                continue
            try:
                a = parse(text)
            except ConfigError as e:
                raise ConfigError(f"data row {line[i]}, {col}: {e}") from None
            who = r.get(f"labeller {n}", "").strip() or f"answer {n}"
            names.append(who)
            sequence[who] = sequence.get(who, 0) + 1
            # The file keeps no times; one microsecond apart keeps each image's answers in
            # their columns' order, which pairwise agreement (Cohen's kappa) depends on.
            judged.append(
                {
                    "item_id": new_id[r["_item"]],
                    "labeller": who,
                    "answer": a,
                    "raw": None,
                    "position": sequence[who],
                    "shown_at": None,
                    "answered_at": now + timedelta(microseconds=len(names)),
                    "seconds": None,
                }
            )
        if len(names) != len(set(names)):
            raise ConfigError(
                f"data row {line[i]}: one labeller answers item_id "
                f"{r['item_id']} twice ({', '.join(names)})"
            )
    return judged, []


def _settings(df: pd.DataFrame, most: int, shape: str) -> tuple[tuple, str]:
    """(k, rule, seed, resamples) from the study columns, and what was assumed without."""
    first = df.iloc[0]
    if shape == "wide":
        most = max(most, len([c for c in df.columns if _ANSWER.fullmatch(c)]))
    given = {c: first[c].strip() for c in STUDY_COLUMNS if c in df.columns and first[c].strip()}
    for c in [*given, "study_name", "study_dataset"]:
        if c in df.columns and df[c].str.strip().nunique() > 1:
            raise ConfigError(f"column {c} holds more than one value; a file holds one study")
    rule = given.get("study_rule", "icst")
    if rule not in ("icst", "majority"):
        raise ConfigError(f"study_rule {rule!r} is not icst or majority")
    values = {
        "k": _whole(given.get("study_k", most), "study_k"),
        "rule": rule,
        "seed": _whole(given.get("study_seed", 0), "study_seed", limit=2**53),
        "resamples": _whole(given.get("study_resamples", 1000), "study_resamples"),
    }
    assumed = ", ".join(f"{c} {v}" for c, v in values.items() if f"study_{c}" not in given)
    k, seed, resamples = values["k"], values["seed"], values["resamples"]
    if not 1 <= k <= 20 or (rule == "majority" and k < 3):
        raise ConfigError(
            f"study_k {k} with rule {rule}; expected 1 to 20 answers per image, "
            "at least 3 for majority"
        )
    if seed < 0 or not 100 <= resamples <= MAX_RESAMPLES:
        raise ConfigError(
            f"study_seed {seed}, study_resamples {resamples}; expected a seed >= 0 "
            f"and 100 to {MAX_RESAMPLES:,} resamples"
        )
    return tuple(values.values()), assumed


def _time(text: str) -> datetime | None:
    """A time as the store keeps them: local, without a zone (one given is converted)."""
    t = str(text).strip()
    try:
        ts = pd.Timestamp(t).to_pydatetime() if t else None
    except ValueError:
        raise ConfigError(f"{t!r} is not a time such as 2026-11-24 13:33:17") from None
    if ts is not None and ts.tzinfo is not None:
        ts = ts.astimezone().replace(tzinfo=None)
    return ts


def _number(text: str) -> float:
    t = str(text).strip()
    try:
        return float(t) if t else np.nan
    except ValueError:
        raise ConfigError(f"seconds {t!r} is not a number") from None
