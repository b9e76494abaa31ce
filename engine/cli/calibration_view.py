"""The calibration tables `labels calibrate` and `labels report` print: the pooled one,
with its headlines, and for a study of several generators the same figures over each
generator's images apart."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from engine.cli.common import Table, console, fmt
from engine.core.errors import LatentfuzzError

if TYPE_CHECKING:
    import pandas as pd

FIGURES = [
    "verdict",
    "n",
    "AUC",
    "95% CI",
    "threshold",
    "bal. acc.",
    "precision",
    "recall",
    "kappa",
    "decides at 95%",
]


def _images(n: int) -> str:
    return f"{n} image{'s' * (n != 1)}"


def _table(table: pd.DataFrame, title: str, by_generator: bool = False) -> Table:
    t = Table(*(["generator"] if by_generator else []), "validator", *FIGURES, title=title)
    for r in table.itertuples():
        first = [r.generator] if by_generator else []
        if isinstance(r.note, str):
            t.add_row(*first, r.validator, r.verdict, "", Text(r.note, "yellow"))
            continue
        t.add_row(
            *first,
            r.validator,
            r.verdict,
            str(r.n),
            fmt(r.auc, ".3f"),
            f"{fmt(r.auc_ci_low, '.2f')}-{fmt(r.auc_ci_high, '.2f')}",
            fmt(r.threshold, ".4g"),
            fmt(r.balanced_accuracy, ".3f"),
            fmt(r.precision, ".3f"),
            fmt(r.recall, ".3f"),
            fmt(r.kappa, ".2f"),
            f"{r.decides} of {r.n}",
        )
    return t


def print_calibration(store, study: str, csv: Path | None = None) -> None:
    """The calibration table of a study's scored validity filters, their headlines, the
    per-generator table where the study has several generators, and both as one CSV
    (`generator` "all" for the pooled rows) when `csv` is given; nothing when no filter
    scored the study."""
    # Deferred (start-up time: loads torch, scipy, duckdb).
    from engine.core.csv_io import to_csv
    from engine.labelling.calibration import headline
    from engine.labelling.study_calibration import calibration_by_generator, calibrations, table_of

    calibs = calibrations(store, study)
    table = table_of(calibs)
    if table.empty:
        if csv is not None:
            raise LatentfuzzError(
                f"no validity filter scored study {study}, so there is no calibration "
                f"table to write; run `latentfuzz labels calibrate {study}` first"
            )
        return
    title = "Validity filters against people (threshold: best balanced accuracy)"
    console.print(_table(table, title))
    undecided = table.loc[table["verdict"].eq("validity"), "undecided"].max()
    if undecided and undecided == undecided:  # NaN when every row is a note
        console.print(f"{_images(int(undecided))} with an undecided verdict left out")
    for (name, what), c in calibs.items():
        if what == "validity" and not isinstance(c, str):
            console.print(headline(name, c), markup=False, soft_wrap=True)
    apart = calibration_by_generator(store, study)
    if not apart.empty:
        title = "The same over each generator's images (a pooled AUC also tells generators apart)"
        console.print(_table(apart, title, by_generator=True))
    if csv is not None:
        # Deferred (start-up time: `latentfuzz --help` loads no pandas).
        import pandas as pd

        rows = pd.concat([table.assign(generator="all"), apart], ignore_index=True)
        to_csv(rows.reindex(columns=["generator", *table.columns]), csv)  # formulas neutralised
        console.print(f"wrote {csv} ({len(rows)} rows)", markup=False)
