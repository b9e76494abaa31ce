"""A seed's search history on the Campaign page, readable: its improvements as frames big
enough to see (at least MIN_PX, enlarged without smoothing), each with its generation,
prediction and fitness beneath, in a strip of the few around the chosen one; a slider
and step buttons that choose the frame shown large (W&B's image step slider); and the
seed's fitness curve, whose points choose it too.

The strip it replaces squeezed 48 frames into the column at about 19 px each, none of
them saying its generation or prediction.
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import math
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st
from PIL import Image

from dashboard.text import md_text

#: Smallest side a frame is shown at, in pixels: a 28 x 28 digit at 4x.
MIN_PX = 96
#: Side of the frame shown large.
LARGE_PX = 224
#: Frames in the strip: five 112 px frames fit the narrowest column whole. A row of every
#: frame that scrolled cut the last one in half and stayed on generations 1-8 while the
#: slider chose generation 13.
STRIP_FRAMES = 5
#: Pixels the charts keep free beyond their first and last generation (their points sat
#: half cut on the edges).
EDGE_PX = 12


def enlarged(img: Image.Image, side: int = MIN_PX) -> Image.Image:
    """`img` enlarged by a whole factor to at least `side` pixels on its short side,
    nearest neighbour, so that pixels stay pixels (a smoothed digit looks blurred)."""
    scale = max(1, math.ceil(side / max(1, min(img.size))))
    return img.resize((img.width * scale, img.height * scale), Image.NEAREST)


def read_frames(home: Path, imp: pd.DataFrame, width: int) -> list[Image.Image | None]:
    """The improvement frames of `imp` (store.history.improvements), in its order; None
    for a frame that cannot be read (a damaged strip, a path outside the home)."""
    # Deferred (start-up time: loads the engine's image helpers only on this tab).
    from engine.api import LatentfuzzError, inside, open_image, read_frame

    got: dict[tuple[str, int], Image.Image] = {}
    for rel, part in imp.groupby("image", sort=False):
        wanted = [int(f) for f in part["image_frame"]]
        try:
            # The store's paths may come from shared bundles: never one outside the home.
            path = inside(home, rel, "generations.image")
        except LatentfuzzError:
            continue
        if path.is_file():  # assembled when the seed finished: one decode for all frames
            try:
                with open_image(rel, "generations.image", root=home) as strip:
                    strip.load()
                    for f in wanted:
                        if (f + 1) * width <= strip.width:
                            got[rel, f] = strip.crop((f * width, 0, (f + 1) * width, strip.height))
            except (LatentfuzzError, OSError, SyntaxError, ValueError):
                pass
        for f in wanted:  # still searching (its frames are appended raw), or a resumed seed
            if (rel, f) not in got:
                with contextlib.suppress(OSError, IndexError, ValueError):
                    got[rel, f] = read_frame(path, f, width)
    return [got.get((r, int(f))) for r, f in zip(imp["image"], imp["image_frame"], strict=True)]


def window(n: int, chosen: int, size: int = STRIP_FRAMES) -> range:
    """The frames the strip shows: `size` of the `n`, the `chosen` one in the middle where
    it can be (at the ends, the first or last `size`)."""
    start = min(max(chosen - size // 2, 0), max(n - size, 0))
    return range(start, min(start + size, n))


def frame_words(r, class_names: tuple[str, ...]) -> list[str]:
    """The lines beneath a frame: generation, prediction (A's and B's with two
    classifiers), fitness."""
    pred = class_names[int(r.best_pred)]
    b = getattr(r, "best_pred_b", None)
    said = f"predicted {pred}" if b is None or pd.isna(b) else f"A {pred} · B {class_names[int(b)]}"
    return [f"generation {int(r.generation)}", said, f"fitness {r.best_fitness:.3g}"]


def shown_at(options: list[int], generation: int) -> int:
    """The improvement shown at `generation`: the last at or before it (the best image
    a generation without an improvement had), else the first."""
    before = [g for g in options if g <= generation]
    return before[-1] if before else options[0]


def picked_generation(event) -> int | None:
    """The generation of the curve's point a click selected (the chart's selection
    state, `{"selection": {"pick": [{"generation": 12}]}}`), or None."""
    try:
        points = event["selection"]["pick"]
    except (KeyError, TypeError):
        return None
    for p in points or []:
        g = p.get("generation") if isinstance(p, dict) else None
        if g is not None:
            return int(g)
    return None


def fitness_curve(gens: pd.DataFrame, improved: pd.Series) -> alt.Chart:
    """The seed's best fitness per generation; its points are clickable (selection
    "pick"), the improvements filled."""
    data = gens[["generation", "best_fitness", "best_pred"]].assign(
        improvement=gens["generation"].isin(improved).map({True: "improved", False: "no change"})
    )
    pick = alt.selection_point(name="pick", fields=["generation"], on="click", nearest=True)
    x = alt.X(
        "generation:Q",
        axis=alt.Axis(format="d", tickMinStep=1),
        scale=alt.Scale(padding=EDGE_PX, nice=False, zero=False),
    )
    line = alt.Chart(data).mark_line(opacity=0.5).encode(x=x, y=alt.Y("best_fitness:Q"))
    points = (
        alt.Chart(data)
        .mark_point(filled=True, size=70)
        .encode(
            x=x,
            y=alt.Y("best_fitness:Q", title="best fitness"),
            color=alt.Color(
                "improvement:N",
                title="",
                scale=alt.Scale(domain=["improved", "no change"], range=["#d55e00", "#bbbbbb"]),
            ),
            tooltip=["generation", "best_fitness", "best_pred"],
        )
        .add_params(pick)
    )
    return (line + points).properties(height=220)


def _data_uri(img: Image.Image) -> str:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def strip_html(
    frames: list[Image.Image | None], words: list[list[str]], chosen: int, first: int, n: int
) -> str:
    """The frames around the chosen one, whole, each with its lines beneath; frame
    `chosen` (an index into `frames`) outlined and its words bold (the one shown large).
    `first`: the first frame's place among the seed's `n` improvements."""
    cells = []
    for i, (img, lines) in enumerate(zip(frames, words, strict=True)):
        mine = i == chosen
        outline = "outline:3px solid #d55e00;outline-offset:1px;" if mine else ""
        big = None if img is None else enlarged(img)
        # At its own size: a CSS width of 96 px squeezed a 112 px frame unevenly.
        pic = (
            f'<img src="{_data_uri(big)}" width="{big.width}" height="{big.height}" '
            f'style="image-rendering:pixelated;{outline}"/>'
            if big is not None
            else f'<div style="width:{MIN_PX}px;height:{MIN_PX}px;background:#eee"></div>'
        )
        text = "<br/>".join(html.escape(x) for x in lines)
        weight = "font-weight:700;" if mine else ""
        cells.append(
            '<figure style="margin:0;flex:0 0 auto;text-align:center">'
            f'{pic}<figcaption style="font-size:0.75rem;line-height:1.2;{weight}">{text}'
            "</figcaption></figure>"
        )
    said = f"improvements {first + 1}–{first + len(frames)} of {n}" if len(frames) < n else ""
    # Wraps rather than scrolls: a column narrower than the strip puts the last frames on
    # a second line, never half of one out of view.
    return (
        '<div style="display:flex;flex-wrap:wrap;gap:10px;padding:6px 4px 4px">'
        + "".join(cells)
        + "</div>"
        + (f'<div style="font-size:0.75rem;color:#808495">{said}</div>' if said else "")
    )


def timeline(
    home: Path,
    gens: pd.DataFrame,
    imp: pd.DataFrame,
    class_names: tuple[str, ...],
    width: int,
    key: str,
) -> int | None:
    """The seed's fitness curve, the step slider, the chosen frame large and every frame
    in a scrolling row. `gens`: the seed's generations rows; `imp`: its improvements
    (store.history.improvements); `width`: a frame's width in the strip. Returns the
    generation shown (None where no improvement was recorded)."""
    if imp.empty:
        st.info("No improvement frame recorded for this seed.")
        return None
    options = [int(g) for g in imp["generation"]]
    slider = f"{key}:generation"
    if not gens.empty:
        event = st.altair_chart(
            fitness_curve(gens, imp["generation"]),
            on_select="rerun",
            selection_mode="pick",
            key=f"{key}:curve",
            width="stretch",
        )
        picked = picked_generation(event)
        # Only a new click moves the slider: the selection stays set across reruns, and
        # would pin the slider where the user then dragged it away.
        if picked is not None and picked != st.session_state.get(f"{key}:picked"):
            st.session_state[slider] = shown_at(options, picked)
        st.session_state[f"{key}:picked"] = picked
    if st.session_state.get(slider) not in options:
        st.session_state[slider] = options[-1]  # the result: where the search ended

    def step(by: int) -> None:
        i = options.index(st.session_state.get(slider, options[-1]))
        st.session_state[slider] = options[min(max(i + by, 0), len(options) - 1)]

    back, mid, on = st.columns([1, 10, 1], vertical_alignment="bottom")
    back.button("◀", key=f"{key}:back", on_click=step, args=(-1,), help="previous improvement")
    on.button("▶", key=f"{key}:next", on_click=step, args=(1,), help="next improvement")
    # Said from the value about to be drawn (the key, not the label, names the widget).
    now = st.session_state[slider]
    label = f"Improvement {options.index(now) + 1} of {len(options)} (generation {now})"
    chosen = mid.select_slider(label, options, key=slider)
    i = options.index(chosen)
    shown = window(len(options), i)
    part = imp.iloc[shown.start : shown.stop]
    frames = read_frames(home, part, width)  # only those shown: each costs a decode
    words = [frame_words(r, class_names) for r in part.itertuples()]
    mine = i - shown.start
    if frames[mine] is not None:
        big = enlarged(frames[mine], LARGE_PX)
        st.image(big, caption=" · ".join(words[mine]), output_format="PNG")
    else:
        st.caption(" · ".join(words[mine]) + " (its image cannot be read)")
    st.html(strip_html(frames, words, mine, shown.start, len(options)))
    return chosen


def expected_gone(gens: pd.DataFrame, expected: int, class_names: tuple[str, ...]) -> str | None:
    """The top-2 chart's note where the expected class leaves the two most likely: the
    store keeps those two per generation only, so its line stops there (it read as the
    class vanishing). None where it stays in the top two."""
    out = gens[(gens["top1_label"] != expected) & (gens["top2_label"] != expected)]
    if out.empty:
        return None
    name, first = class_names[expected], int(out["generation"].min())
    return (
        f"The expected class {name} is not among the two most likely classes from generation "
        f"{first} on"
        + ("" if len(out) == 1 else f" ({len(out)} generations)")
        + ": the store keeps the two most likely per generation, so its line stops there."
    )


def unknown_seed(given: str, seeds: pd.DataFrame, shown: int) -> str:
    """One line for a link whose `?seed=` names no seed this tab shows: what it gave, why
    not, and what is shown (`?seed=999` and `?seed=abc` showed seed 0 with a caption that
    gave no reason). `seeds`: the campaign's seeds rows."""
    said = md_text(given if len(given) <= 40 else given[:40] + "…")
    try:
        idx = int(given)
    except ValueError:
        why = "which is not a seed number"
    else:
        row = seeds[seeds["seed_idx"] == idx]
        if row.empty:
            low, high = int(seeds["seed_idx"].min()), int(seeds["seed_idx"].max())
            why = f"but this campaign's seeds are {low} to {high}"
        else:
            why = (
                "which is not viable (the classifier mislabels its image already), so it "
                "was not searched"
            )
    return f"The link asks for seed {said}, {why}; showing seed {shown}."
