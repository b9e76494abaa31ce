"""A running campaign's seeds that have failed so far: still searching, their best
individual already failing the campaign's criterion in a written generation (store
history.failing_so_far). The Campaign page's live gallery shows them beside the seeds
done, with their best image so far, and its tiles count them ("misclassified so far"):
with "Stop at failure" off, the page said "misclassified 0 (0%)" until the end, while the
convergence chart had every seed below the red line from generation 15.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from PIL import Image

from store.failures import failed_as, status_as, target_outcome
from store.history import BEST_FAILS

#: A running campaign's seed still searching whose best individual already fails (store
#: history.failing_so_far): not a stored status, the live view's own.
FAILING = "failing"


def decided_live(cfg: dict) -> bool:
    """Whether the stored config's fitness is the one that goes with its criterion (the
    engine's own pairing, engine/search/fitness.py), with a rule for the criterion in
    store.history.BEST_FAILS: then its generations rows tell failures found so far."""
    # Deferred (start-up time: loads torch).
    from engine.api import FITNESS

    fitness, criterion = cfg.get("fitness"), cfg.get("criterion")
    if fitness not in FITNESS or criterion not in BEST_FAILS:
        return False
    return FITNESS.get(fitness).criterion == criterion


def with_failing_so_far(seeds: pd.DataFrame, so_far: pd.DataFrame) -> pd.DataFrame:
    """`seeds` with the rows of store.history.failing_so_far marked FAILING: their
    iterations the generation of their first failure (what the finished row will say),
    their prediction and fitness those of the best so far, and where its frame lies
    (so_far_image, so_far_frame, so_far_generation) for the card."""
    out = seeds.copy()
    for col in ("so_far_image", "so_far_frame", "so_far_first_frame", "so_far_generation"):
        out[col] = None
    if so_far.empty:
        return out
    got = so_far.set_index("seed_idx")
    hit = out["seed_idx"].isin(got.index) & out["status"].eq("searching")
    got = got.loc[out.loc[hit, "seed_idx"]]  # in the order of `out`'s rows
    taken = {
        "status": [FAILING] * len(got),
        "iterations": got["first_failure"],
        "final_pred": got["best_pred"],
        "final_fitness": got["best_fitness"],
        "final_pred_b": got["best_pred_b"],
        "so_far_image": got["image"],
        "so_far_frame": got["image_frame"],
        "so_far_first_frame": got["first_frame"],
        "so_far_generation": got["generation"],
    }
    for col, values in taken.items():
        if col in out:
            out.loc[hit, col] = list(values)
    return out


def csv_rows(shown: pd.DataFrame, columns: list[str], criterion: str | None) -> pd.DataFrame:
    """A running campaign's seed rows for its CSV, as its gallery shows them: the
    stored columns, a seed failing so far said so ("misclassified so far", its prediction
    and first failure those of its best so far), where the CSV said "searching"."""
    out = shown[columns].copy()
    out["status"] = [said_as(s, criterion) if s == FAILING else s for s in out["status"]]
    return out


def said_as(status: str, criterion: str | None) -> str:
    """A seed status in the campaign's words, FAILING as its failures "so far"."""
    if status == FAILING:
        return f"{failed_as(criterion)} so far"
    return status_as(status, criterion)


def best_so_far(home: Path, r, seed_img: Image.Image | None) -> tuple[Image.Image | None, bool]:
    """The image of a FAILING seed's best so far, from its improvements strip (its raw
    sidecar while the seed searches), at the seed image's size, and True; where the strip
    lags the rows (its frames are flushed on a clock of their own), its latest failing
    frame on disk and False; (None, False) when none is written or readable."""
    image, frame = getattr(r, "so_far_image", None), getattr(r, "so_far_frame", None)
    first = getattr(r, "so_far_first_frame", None)
    if not isinstance(image, str) or frame is None or pd.isna(frame):
        return None, False
    width = stored_width(home, r.seed_image)
    if width is None:
        return None, False
    # Deferred (dashboard.timeline and engine.api load the engine's image helpers).
    from dashboard.timeline import read_frames
    from engine.api import LatentfuzzError, frame_count, inside

    try:
        held = frame_count(inside(home, image, "generations.image"), width) or 0
    except LatentfuzzError:
        return None, False
    # Improvements only lower the best fitness: every frame from the first failing one
    # on fails too.
    shown = min(int(frame), held - 1)
    if shown < (int(frame) if first is None or pd.isna(first) else int(first)):
        return None, False
    (img,) = read_frames(home, pd.DataFrame({"image": [image], "image_frame": [shown]}), width)
    if img is not None and seed_img is not None:
        img = img.resize(seed_img.size, Image.NEAREST)
    return img, img is not None and shown == int(frame)


def stored_width(home: Path, rel: str | None) -> int | None:
    """The width of a stored image (its header only), None when it cannot be read: a
    strip's frames are as wide as its seed image."""
    # Deferred (start-up time: loads the engine's image helpers).
    from engine.api import LatentfuzzError, open_image

    if not isinstance(rel, str):
        return None
    try:
        with open_image(rel, "seed_image", root=home) as img:
            return img.width
    except (LatentfuzzError, OSError, SyntaxError, ValueError):
        return None


def so_far_text(
    r, head: str, final: str, class_names: tuple[str, ...], criterion: str | None
) -> str:
    """A FAILING seed's line: its best so far fails since generation n, and it searches
    on (its outcome is not written yet)."""
    since = f" since generation {int(r.iterations)}, still searching"
    if not pd.isna(getattr(r, "final_pred_b", None)):
        b = class_names[int(r.final_pred_b)]
        return f"{head}, A says **{final}**, B says **{b}**{since} (they disagree so far)"
    target = getattr(r, "target", None)
    if target is not None and not pd.isna(target):
        name = class_names[int(target)]
        return f"{head}, {target_outcome(True, f'**{name}**', final)}{since} (so far)"
    return f"{head}, predicted **{final}**{since} ({said_as(FAILING, criterion)})"
