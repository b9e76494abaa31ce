"""Comparing campaigns in the ICST layout, with the significance marks of the paper.

Campaigns are grouped into blocks of equal dataset, perturbation preset and generation
budget, as the study compares generators within one dataset x perturbation block; marks
never cross a block. Campaigns of several strategies are blocked by dataset, generator and
the evaluation budget their study set (``set_budget``), never by what each campaign spent
or could spend. Within a block of two or more finished campaigns: best value per column
in bold, values not significantly different from the best underlined; a campaign alone in
its block is marked nothing, as it is compared with nothing. Tests, at alpha = 0.05: Fisher's exact
test on the 2x2 counts for the proportions (viable of seeds, misclassified of viable,
valid of labelled, preserved of valid), two-sided Mann-Whitney U on the ICST iterations
(every viable seed, survivors at the budget; fewer is better).

Only finished campaigns take part in the marks. A running, interrupted, failed or crashed
campaign's figures cover the seeds it has finished so far, a different sample (the seeds
that fail early finish first, so its iterations look best): such a row is shown with its
status and never marked, nor does it decide what the best of its block is.
"""

from __future__ import annotations

import json

import pandas as pd
from scipy.stats import fisher_exact, mannwhitneyu

from dashboard.text import setting_label
from engine.api import campaign_validity
from store import Store
from store import campaigns as sc
from store import studies as ss

ALPHA = 0.05
COLUMNS = {
    "viable_pct": "max",
    "misclassified_pct": "max",
    "iterations_icst": "min",
    "valid_pct": "max",
    "preserved_pct": "max",
}
BLOCK = ["dataset", "preset", "budget"]
#: Blocks come in the study's order: low before high, then latentfuzz's own presets.
PRESET_ORDER = {"low": 0, "high": 1, "strong": 2, "custom": 3}
#: Campaigns of different strategies share no preset or generation: they are compared at
#: equal dataset and evaluation budget per seed (``latentfuzz study --strategies``), the
#: budget set (``set_budget``), and equal seeds: a study's campaigns share their seed
#: images whatever they search (a pixel-space baseline starts from the test images the
#: VAE encodes), so a study is its own block; outside a study the generator stands in, as
#: a VAE campaign and a GAN campaign of two strategies differ in both.
STRATEGY_BLOCK = ["dataset", "seeds_from", "eval_budget"]
#: Prefixed to the block columns when the campaigns' failure criteria differ: a count of
#: disagreements between two classifiers is no count of misclassifications.
CRITERION = "criterion"


#: Prefix of the columns that carry a grid's axes in the table (``with_axes``).
AXIS = "axis: "


def with_axes(table: pd.DataFrame, cells: pd.DataFrame, along: str) -> pd.DataFrame:
    """The table of a grid's cells with one column per axis (AXIS + name, values as text),
    sorted so that every block (the other axes' values) is together. `cells`:
    store.studies.grid_cells; `along`: the axis the blocks compare (its values are the rows)."""
    axes = {r.campaign_id: r.axes for r in cells.itertuples()}
    names = list(next(iter(axes.values()))) if axes else []
    t = table.copy()
    for name in names:
        t[AXIS + name] = [_text(axes.get(c, {}).get(name)) for c in t["campaign"]]
    by = [AXIS + n for n in names if n != along]
    if names:
        key = t[[*by, AXIS + along]].astype(str).apply(tuple, axis=1)
        t = t.iloc[key.argsort(kind="stable")].reset_index(drop=True)
    t.attrs["blocks"], t.attrs["along"] = by, AXIS + along
    return t


def _text(v) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def pivot(table: pd.DataFrame) -> pd.DataFrame:
    """A grid's cells pivoted: a row per block (the other axes), a column per value of
    the compared axis, cells 'misclassified % (#) / ICST iterations', or '... / N
    evaluations' for a campaign that searched its whole budget (NSGA-II: its iterations
    were always its budget)."""
    by, along = table.attrs.get("blocks", []), table.attrs["along"]

    def cell(r) -> str:
        pct = "n/a" if pd.isna(r.misclassified_pct) else f"{r.misclassified_pct:.0f}%"
        if getattr(r, "whole_budget", False) is True:
            evals = getattr(r, "evaluations_per_seed", None)
            it = "n/a" if evals is None or pd.isna(evals) else f"{evals:,.0f} evaluations"
        else:
            it = "n/a" if pd.isna(r.iterations_icst) else f"{r.iterations_icst:.1f}"
        return f"{pct} ({r.misclassified}) / {it}"

    t = table.assign(figure=[cell(r) for r in table.itertuples()])
    if not by:  # a grid of one axis: one row (an index may not also be the columns)
        t, by = t.assign(block="all cells"), ["block"]
    p = t.pivot_table(index=by, columns=along, values="figure", aggfunc="first", sort=False)
    p.columns = [str(c).removeprefix(AXIS) for c in p.columns]
    # The axes in people's words (the index showed "strategy_params.perturbation").
    p.index.names = [setting_label(str(n).removeprefix(AXIS)) for n in p.index.names]
    return p.fillna("–")  # a cell not selected, or not run: it showed "None"


def finished(table: pd.DataFrame) -> pd.Series:
    """Which rows are finished campaigns, the only ones marked (all, in a table without
    statuses)."""
    return table["status"].eq("finished") if "status" in table else pd.Series(True, table.index)


def block_columns(table: pd.DataFrame) -> list[str]:
    """A grid's other axes (``with_axes``), else BLOCK, or STRATEGY_BLOCK when the
    campaigns use more than one strategy."""
    mixed = CRITERION in table and table[CRITERION].nunique() > 1
    if grid := table.attrs.get("blocks"):
        # A grid's own blocks, split by criterion too (a classifier_b axis mixes them).
        return [CRITERION, *grid] if mixed else grid
    # A grid of one axis (a strategy study) has no other axes: the usual blocks apply.
    # Finished campaigns decide: a running one of another strategy must not regroup them.
    done = table[finished(table)]
    done = table if done.empty else done
    base = STRATEGY_BLOCK if "strategy" in done and done["strategy"].nunique() > 1 else BLOCK
    # Every campaign decides this one: rows of two criteria never share a block.
    return [CRITERION, *base] if mixed else base


def without_criterion(cols: list[str]) -> list[str]:
    """The block columns without the criterion."""
    return cols[1:] if cols[:1] == [CRITERION] else cols


def set_budget(config: dict, study: str | None, old_studies: dict[str, int]) -> int | None:
    """The evaluation budget per seed a campaign was set, which Compare blocks strategies
    by: its ``evaluations`` setting (which every ``study --strategies`` sets, the same for
    all its campaigns); else, in a study of one campaign per strategy run before studies
    set it, the study's budget (``old_studies``: the largest of its campaigns', the GA's,
    which the others' whole generations stopped short of); else the most its own
    generation budget lets a seed cost (a campaign run alone). None: not recorded (an
    imported campaign)."""
    evaluations = (config.get("strategy_params") or {}).get("evaluations")
    if evaluations is not None:
        return int(evaluations)
    if study is not None and study in old_studies:
        return old_studies[study]
    return config.get("evaluation_budget")


def campaign_rows(
    store: Store,
    ids: list[str],
    camps: pd.DataFrame | None = None,
    seeds: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, dict[str, pd.Series], dict[str, pd.Series]]:
    """One ICST row per campaign (sorted into blocks); each campaign's ICST iterations
    (one value per viable seed that finished: its first failure, or the budget); and the
    iterations of its failing seeds. `camps` (store.campaigns.campaigns_by_id) and `seeds`
    (store.campaigns.seeds_of) may come from the dashboard's cache; otherwise one query each."""
    camps = sc.campaigns_by_id(store, ids) if camps is None else camps
    seeds = sc.seeds_of(store, ids) if seeds is None else seeds
    by_id = camps.set_index("id")
    studies = camps["study"].dropna().unique().tolist() if "study" in camps else []
    old_studies = ss.strategy_study_budgets(store, studies) if studies else {}
    per = dict(tuple(seeds.groupby("campaign_id", sort=False)))
    empty = seeds.iloc[:0]
    rows, iterations, failures = [], {}, {}
    for cid in ids:
        c = by_id.loc[cid]
        s = per.get(cid, empty)
        viable_seeds = s[s["viable"].astype(bool) & s["iterations"].notna()]
        failing = s["misclassified"].fillna(False).astype(bool)
        viable, mis = int(s["viable"].sum()), int(failing.sum())
        icst = viable_seeds["iterations"].astype(float)
        to_fail = s.loc[failing, "iterations"].astype(float)
        iterations[cid], failures[cid] = icst, to_fail
        rows.append(
            {
                "campaign": cid,
                "name": c["name"],
                "status": c["status"],
                "dataset": c["dataset"],
                "generator": c["generator"],
                "seeds_from": study if isinstance(study := c.get("study"), str) else c["generator"],
                "preset": c["preset"],
                "strategy": c["strategy"],
                CRITERION: c["config"].get("criterion") or "misclassified",
                "budget": (c["config"].get("strategy_params") or {}).get("generations"),
                "eval_budget": set_budget(c["config"], c.get("study"), old_studies),
                "budget_rule": c["config"].get("budget_rule"),
                "seeds": len(s),
                "viable": viable,
                "viable_pct": 100 * viable / max(1, len(s)),
                "misclassified": mis,
                "misclassified_pct": 100 * mis / viable if viable else None,
                "iterations_icst": icst.mean() if len(icst) else None,
                "iterations_icst_std": icst.std() if len(icst) > 1 else None,
                "iterations_to_failure": to_fail.mean() if len(to_fail) else None,
                "iterations_to_failure_std": to_fail.std() if len(to_fail) > 1 else None,
                # A search of the whole budget (NSGA-II) is told in generations and
                # evaluations, not iterations (dashboard/compare_table.py).
                "whole_budget": (c["config"].get("strategy_params") or {}).get("stop_at_failure")
                is False,
                "evaluations_per_seed": viable_seeds["evaluations"].mean()
                if len(viable_seeds)
                else None,
            }
        )
    table = pd.DataFrame(rows)
    # Human labels, where a validity study covers these campaigns' failing images.
    labels = campaign_validity(store, ids)
    table = table.merge(labels, on="campaign", how="left")
    for c in ("labelled", "valid", "preserved"):
        table[c] = table[c].fillna(0).astype(int)
    cols = block_columns(table)
    first = [CRITERION] if cols[:1] == [CRITERION] else []
    if without_criterion(cols) == BLOCK:  # the study's order: low before high, then our own presets
        order = table.apply(
            lambda r: (
                *(str(r[c]) for c in first),
                str(r.dataset),
                PRESET_ORDER.get(r.preset, 9),
                str(r.preset),
                str(r.budget),
            ),
            axis=1,
        )
    else:
        order = table[cols].astype(str).apply(tuple, axis=1)
    table = table.iloc[order.argsort(kind="stable")].reset_index(drop=True)
    return table, iterations, failures


#: Prefix of the columns that carry a validity filter's automatic figures (``with_auto``):
#: AUTO + validator + ":" + valid_pct, valid, images, threshold or study.
AUTO = "auto: "


def auto_column(validator: str, field: str) -> str:
    """The table column of a validity filter's automatic figure (valid_pct, valid, images,
    threshold, study)."""
    return f"{AUTO}{validator}:{field}"


def with_auto(table: pd.DataFrame, auto: pd.DataFrame, validators: list[str]) -> pd.DataFrame:
    """The table with each chosen validity filter's automatic validity of the campaign's
    result images (store.calibration.auto_validity_table): % valid, valid, images, the
    threshold and the study it was calibrated on (None: fixed); missing where the filter
    scored none of a campaign's result images. The chosen filters are kept in
    ``attrs["auto"]``, in order: the markdown gives each its column beside people's."""
    t = table.copy()
    by = auto.set_index(["campaign_id", "validator"]) if len(auto) else None
    for v in validators:
        for field in ("valid_pct", "valid", "images", "threshold", "study"):
            t[auto_column(v, field)] = [
                by.loc[(c, v), field] if by is not None and (c, v) in by.index else None
                for c in t["campaign"]
            ]
    t.attrs = {**table.attrs, "auto": list(validators)}
    return t


def blocks(table: pd.DataFrame) -> list[tuple[tuple, pd.Index]]:
    """(dataset, preset, budget), or (dataset, evaluation budget) across strategies, and
    the rows of each block, in table order."""
    cols = block_columns(table)
    if not cols:  # a grid of one axis: one block
        return [((), table.index)]
    key = table[cols].astype(str).apply(tuple, axis=1)
    return [(k, table.index[key == k]) for k in dict.fromkeys(key)]


def significance(table: pd.DataFrame, iterations: dict[str, pd.Series]) -> pd.DataFrame:
    """Per cell: 'best', 'tied' (not significantly different from the best of its block)
    or ''."""
    marks = pd.DataFrame("", index=table.index, columns=list(COLUMNS))
    done = table.index[finished(table)]
    for _, rows in blocks(table):
        # Alone, a campaign is the best of nothing: a random search alone in its block
        # was set in bold beside a GA alone in another.
        if len(rows := rows[rows.isin(done)]) >= 2:
            _mark_block(table.loc[rows], iterations, marks)
    return marks


def _mark_block(t: pd.DataFrame, iterations: dict[str, pd.Series], marks: pd.DataFrame) -> None:
    counts = {
        "viable_pct": ("viable", "seeds"),
        "misclassified_pct": ("misclassified", "viable"),
        "valid_pct": ("valid", "labelled"),
        "preserved_pct": ("preserved", "valid"),
    }
    mixed = "strategy" in t and t["strategy"].nunique() > 1
    for col, how in COLUMNS.items():
        if mixed and col == "iterations_icst":
            # A generation is 15 of the GA's evaluations, 30 of SINVAD's and all of
            # FGSM's: FGSM's 2 iterations were bold beside the GA's 12 (ITERATIONS_NOTE).
            continue
        vals = t[col].astype(float)
        # All equal (a study's strategies share their seeds, so their viable share): no
        # campaign is better than another, and none is set in bold.
        if vals.notna().sum() < 2 or vals.dropna().nunique() == 1:
            continue
        best = vals.idxmax() if how == "max" else vals.idxmin()
        for i in t.index:
            if pd.isna(vals[i]):
                continue
            if i == best or vals[i] == vals[best]:
                marks.loc[i, col] = "best"
                continue
            if col in counts:
                k, n = counts[col]
                a, b = t.loc[best], t.loc[i]
                p = fisher_exact([[a[k], a[n] - a[k]], [b[k], b[n] - b[k]]])[1]
            else:
                x, y = iterations[t.loc[best, "campaign"]], iterations[t.loc[i, "campaign"]]
                p = mannwhitneyu(x, y, alternative="two-sided")[1] if len(x) and len(y) else 0.0
            marks.loc[i, col] = "tied" if p >= ALPHA else ""
