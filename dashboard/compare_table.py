"""Compare's ICST table in words: one markdown table per block, its title and notes, in
the glossary's words (a grid's axes are config paths; "Block:
strategy_params.perturbation = high" read as one), and the settings that differ.

The rows, blocks and marks come from dashboard/compare.py."""

from __future__ import annotations

import json

import pandas as pd

from dashboard.compare import (
    AXIS,
    BLOCK,
    CRITERION,
    STRATEGY_BLOCK,
    auto_column,
    block_columns,
    blocks,
    without_criterion,
)
from dashboard.text import md_text, setting_label, table_markdown
from store import Store
from store import campaigns as sc
from store.failures import failed_as


def axis_label(column: str) -> str:
    """A table column of a grid's axis (AXIS + config path) in people's words."""
    return setting_label(column.removeprefix(AXIS))


def block_title(key: tuple, cols: list[str] | None = None) -> str:
    if cols is not None and cols[:1] == [CRITERION]:
        return f"{block_title(key[1:], cols[1:])}; failing: {failed_as(key[0])}"
    if cols is not None and cols not in (BLOCK, STRATEGY_BLOCK):
        parts = [f"{axis_label(c)} = {_value(v)}" for c, v in zip(cols, key, strict=True)]
        return ", ".join(parts) or "all cells"
    if cols == STRATEGY_BLOCK:
        dataset, seeds_from, budget = key
        # An imported campaign has no budget; the others' then read as floats ("170.0").
        shown = "an unknown number of" if pd.isna(budget) else f"{int(budget)}"
        return f"{dataset}, {seeds_from}, {shown} evaluations per seed at most"
    dataset, preset, budget = key
    # A strategy without presets (SINVAD, Argus) or an imported campaign: "None
    # perturbation, None generations".
    parts = [
        str(dataset),
        "no perturbation preset" if _missing(preset) else f"{preset} perturbation",
        *([] if _missing(budget) else [f"{budget} generations"]),
    ]
    return ", ".join(parts)


def _missing(v: object) -> bool:
    """A block key's missing value: the keys are text, so None reads "None" (or "nan")."""
    return v is None or (isinstance(v, float) and pd.isna(v)) or str(v) in ("None", "nan", "")


def _value(v: object) -> str:
    return "none" if _missing(v) else str(v)


#: Under a block of several strategies, whose iterations are not marked.
ITERATIONS_NOTE = (
    "Iterations count generations, and a generation is a different number of evaluations "
    "for each strategy: they are not marked."
)


#: Above a block where some campaigns search their whole budget and others do not.
WHOLE_BUDGET_NOTE = (
    "Iterations blank: {names} searched the whole budget past the first failure (NSGA-II), "
    "so its seeds have no search length in iterations; {figures}."
)


def whole_budget(rows: pd.DataFrame) -> pd.Series:
    """Which campaigns of `rows` searched their whole budget past the first failure."""
    return rows.get("whole_budget", pd.Series(False, index=rows.index)).fillna(False).astype(bool)


def whole_budget_note(rows: pd.DataFrame) -> str:
    """Why some iteration cells of a block are blank, and those campaigns' generations and
    evaluations; '' where no campaign, or every campaign, of the block searched its whole
    budget (the block then shows generations and evaluations for all)."""
    whole = whole_budget(rows)
    if not whole.any() or whole.all():
        return ""
    them = rows[whole]
    figures = "; ".join(
        f"{r['name']}: {_figure(r.get('budget'), 'd')} generations, "
        f"{_figure(r.get('evaluations_per_seed'), ',.0f')} evaluations per seed"
        for _, r in them.iterrows()
    )
    names = ", ".join(str(n) for n in them["name"])
    return WHOLE_BUDGET_NOTE.format(names=names, figures=figures)


def _figure(v: object, fmt: str) -> str:
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return "n/a"
    return format(int(v) if fmt == "d" else float(v), fmt)


def budget_note(rows: pd.DataFrame) -> str:
    """How the campaigns of a strategy block kept their budget, from the rules they
    recorded (engine/search/strategies/base.py's BUDGET_RULE), and that their iterations
    are not compared; '' where neither applies."""
    rules = sorted({str(r) for r in rows.get("budget_rule", pd.Series()).dropna()})
    notes = [f"Budget kept by: {', '.join(rules)}."] if rules else []
    # Not where no iterations are shown (every campaign searched its whole budget).
    if "strategy" in rows and rows["strategy"].nunique() > 1 and not whole_budget(rows).all():
        notes.append(ITERATIONS_NOTE)
    return " ".join(notes)


def how_scored(threshold: float, study: str | None) -> str:
    """How a validity filter decided: "calibrated on STUDY" or "threshold T"."""
    return f"calibrated on {study}" if isinstance(study, str) else f"threshold {threshold:.3g}"


def auto_header(rows: pd.DataFrame, validator: str) -> tuple[str, bool]:
    """A validity filter's column title over a block's rows, and whether it says how the
    filter decided (one study or threshold for every campaign it scored; else each cell
    says it): "ssim-nearest: % valid (auto, calibrated on S) (#)"."""
    pct = rows[auto_column(validator, "valid_pct")]
    scored = rows[pct.notna()]
    hows = {
        how_scored(r[auto_column(validator, "threshold")], r[auto_column(validator, "study")])
        for _, r in scored.iterrows()
    }
    if len(hows) == 1:
        return f"{validator}: % valid (auto, {hows.pop()}) (#)", True
    return f"{validator}: % valid (auto) (#)", False


def auto_cell(r: pd.Series, validator: str, said: bool) -> str:
    """A campaign's automatic validity by one filter, "62 (5)", with how it decided
    where the column title does not say it; "–" where the filter scored none of its
    result images."""
    pct = r[auto_column(validator, "valid_pct")]
    if pct is None or pd.isna(pct):
        return "–"
    text = f"{pct:.0f} ({int(r[auto_column(validator, 'valid')])})"
    if said:
        return text
    how = how_scored(r[auto_column(validator, "threshold")], r[auto_column(validator, "study")])
    return f"{text}, {md_text(how)}"


def markdown_table(table: pd.DataFrame, marks: pd.DataFrame) -> str:
    """The ICST table as markdown, one table per block: bold best, underlined not
    significantly different from the best of the block."""

    def cell(i: int, col: str, text: str) -> str:
        mark = marks.loc[i, col]
        return f"**{text}**" if mark == "best" else f"<u>{text}</u>" if mark == "tied" else text

    def num(v: float, fmt: str, empty: str = "n/a") -> str:
        return empty if pd.isna(v) else f"{v:{fmt}}"

    def labelled(i: int, r: pd.Series, col: str, count: str) -> str:
        if pd.isna(r[col]):
            return "–"  # no validity study covers this campaign yet
        return f"{cell(i, col, f'{r[col]:.0f}')} ({r[count]})"

    def lengths(i: int, r: pd.Series, whole: bool, all_whole: bool) -> str:
        """A campaign's search-length cells, in its strategy's words."""
        first = (
            f"{num(r.iterations_to_failure, '.1f')} "
            f"({num(r.iterations_to_failure_std, '.1f', '-')}) | "
        )
        if all_whole:
            return (
                f"{_figure(r.get('budget'), 'd')} | "
                f"{_figure(r.get('evaluations_per_seed'), ',.0f')} | {first}"
            )
        if whole:  # blank, as WHOLE_BUDGET_NOTE says above the block
            return " |  | "
        icst = cell(i, "iterations_icst", num(r.iterations_icst, ".1f"))
        return f"{icst} ({num(r.iterations_icst_std, '.1f', '-')}) | {first}"

    cols = block_columns(table)
    strategies = without_criterion(cols) == STRATEGY_BLOCK
    second = table.attrs.get("along") or ("strategy" if strategies else "generator")
    out = []
    for key, rows in blocks(table):
        crit = table.loc[rows[0]].get(CRITERION) or "misclassified"
        failing = "misclassification" if crit == "misclassified" else failed_as(crit)
        whole = whole_budget(table.loc[rows])
        notes = [
            budget_note(table.loc[rows]) if strategies else "",
            whole_budget_note(table.loc[rows]),
        ]
        note = " ".join(n for n in notes if n)
        # Each validity filter's automatic figure, beside people's.
        heads = [(v, *auto_header(table.loc[rows], v)) for v in table.attrs.get("auto", [])]
        length_heads = (
            [
                "generations",
                "evaluations per seed, mean",
                "first failure found in generation, mean (std)",
            ]
            if whole.all()
            else ["iterations (ICST), mean (std)", "iterations to failure, mean (std)"]
        )
        out += [
            f"**Block: {md_text(block_title(key, cols))}**",
            "",
            *([md_text(note), ""] if note else []),
            f"| campaign | {md_text(axis_label(second))} | % viable seeds "
            f"| % {failing} (#) | {' | '.join(length_heads)} "
            f"| % validity (#) | {''.join(md_text(h) + ' | ' for _, h, _ in heads)}"
            "% label preservation (#) |",
            "|---|---|---|---|" + "---|" * len(length_heads) + "---|---|" + "---|" * len(heads),
        ]
        for i in rows:
            r = table.loc[i]
            status = r.get("status", "finished")
            name = md_text(r["name"]) + ("" if status == "finished" else f" *({status})*")
            out.append(
                f"| {name} | {md_text(_value(r[second]))} | "
                f"{cell(i, 'viable_pct', f'{r.viable_pct:.0f}')} | "
                f"{cell(i, 'misclassified_pct', num(r.misclassified_pct, '.0f'))} "
                f"({r.misclassified}) | "
                f"{lengths(i, r, bool(whole[i]), bool(whole.all()))}"
                f"{labelled(i, r, 'valid_pct', 'valid')} | "
                f"{''.join(auto_cell(r, v, said) + ' | ' for v, _, said in heads)}"
                f"{labelled(i, r, 'preserved_pct', 'preserved')} |"
            )
        out.append("")
    return "\n".join(out)


#: Realism's columns (store.metrics.realism_table), their titles and formats: never
#: Inception's features, which every title says.
REALISM = {
    "fid": ("FID (classifier features, not Inception)", ",.1f"),
    "kid": ("KID (classifier features, not Inception)", ",.2f"),
    "kid_sd": ("KID SD over subsets", ",.2f"),
    "images": ("images compared", ",d"),
    "reference_images": ("real test images", ",d"),
}


def realism_markdown(realism: pd.DataFrame, table: pd.DataFrame) -> str:
    """One row per campaign of the ICST table (campaign, name, status, generator), in its
    order: its realism figures (store.metrics.realism_table); "–" where none is stored
    (an older campaign, one not finished, a dataset without a default classifier), "n/a"
    for a figure that too few images leave undefined."""
    by = realism.set_index("campaign_id")

    def figure(v: object, fmt: str) -> str:
        if v is None or pd.isna(v):
            return "n/a"
        return format(int(v) if fmt.endswith("d") else float(v), fmt)

    out = [
        "| campaign | generator | " + " | ".join(t for t, _ in REALISM.values()) + " |",
        "|---|---|" + "---|" * len(REALISM),
    ]
    for _, r in table.iterrows():
        status = r.get("status", "finished")
        name = md_text(r["name"]) + ("" if status == "finished" else f" *({status})*")
        if r["campaign"] in by.index:
            m = by.loc[r["campaign"]]
            cells = [figure(m[k], f) for k, (_, f) in REALISM.items()]
        else:
            cells = ["–"] * len(REALISM)
        out.append(f"| {name} | {md_text(_value(r['generator']))} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def config_diff(store: Store, ids: list[str], camps: pd.DataFrame | None = None) -> pd.DataFrame:
    """Settings that differ between the campaigns (flattened config keys)."""
    camps = sc.campaigns_by_id(store, ids) if camps is None else camps
    rows = camps.set_index("id")
    flat = {}
    for cid in ids:
        r = rows.loc[cid]
        # One canonical model name: the zoo name the campaign resolved ('mnist-vae'), not
        # the family or default a config may give ('vae', none), which would differ falsely.
        # And its name now: a campaign renamed since showed the name it was launched with.
        # (An unnamed campaign's name is its id: a row repeating the column headers.)
        cfg = {
            **r["config"],
            "generator": r["generator"],
            "classifier": r["classifier"],
            "name": r["name"] if r["name"] != cid else None,
        }
        flat[cid] = pd.json_normalize(json.loads(json.dumps(cfg))).iloc[0].astype(str)
    df = pd.DataFrame(flat)
    # A setting only some campaigns have (SINVAD's decay, the GA's preset) differs too.
    df = df[df.nunique(axis=1, dropna=False) > 1]
    # People's words for the settings (snake_case config paths before), the path itself
    # where two would read the same; a setting one campaign has not: blank, not "None".
    words = [setting_label(k) for k in df.index]
    df.index = [w if words.count(w) == 1 else k for w, k in zip(words, df.index, strict=True)]
    return df.replace({"None": "", "nan": ""}).fillna("")


def settings_markdown(diff: pd.DataFrame, names: dict[str, str]) -> str:
    """`config_diff` as a Markdown table, a column per campaign under its name. Not a
    dataframe: the grid's code (1.2 MB of scripts) was loaded for this table alone, the
    last third of a first visit's wait (issue 36, point 7); and no name is cut short."""
    if diff.empty:
        return "No setting differs between these campaigns."
    out = diff.set_axis([names.get(c, c) for c in diff.columns], axis=1)
    out.insert(0, "setting", diff.index, allow_duplicates=True)
    return table_markdown(out)
