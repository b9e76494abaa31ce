"""AppTest of a seed's search history on the Campaign page (issue 36, point 2): every
improvement a frame big enough to see, with its generation, prediction and fitness; the
slider and step buttons move the frame shown; a point clicked on the seed's fitness curve
shows that generation's frame."""

from __future__ import annotations

import base64
import io
import json
import re

import numpy as np
from PIL import Image

from dashboard.timeline import (
    MIN_PX,
    STRIP_FRAMES,
    enlarged,
    expected_gone,
    picked_generation,
    shown_at,
    window,
)
from store import Store, history


def images(at) -> list:
    return list(at.get("image"))


def shown(at) -> str:
    """The caption of the frame shown large."""
    (img,) = images(at)
    return img.proto.imgs[0].caption


def test_the_timeline_shows_every_improvement_readable_and_steps_through_them(app, seeded):
    home, cid = seeded
    imp = history.improvements(Store(home / "latentfuzz.duckdb"), cid, 0)
    assert len(imp) >= 3  # the fixture's seed 0 improves often enough to step through
    at = app("campaign.py", id=cid, tab="Seed detail", seed="0")
    assert not at.exception, at.exception
    # The strip of 48 frames at 19 px, no words: gone.
    assert not [i for i in images(at) if "left to right" in i.proto.imgs[0].caption]
    (strip,) = at.get("html")
    body = strip.proto.body
    pictures = re.findall(r'src="data:image/png;base64,([^"]+)"', body)
    assert len(pictures) == min(len(imp), STRIP_FRAMES)  # whole frames, never 48 squeezed
    for b64 in pictures:  # each frame at least 96 px, enlarged without smoothing
        with Image.open(io.BytesIO(base64.b64decode(b64))) as im:
            assert min(im.size) >= MIN_PX
            a = np.asarray(im)
        k = a.shape[0] // 28  # whole blocks of one pixel each: no smoothing
        assert (np.repeat(np.repeat(a[::k, ::k], k, 0), k, 1) == a).all()
    for r in imp.iloc[-STRIP_FRAMES:].itertuples():  # the last ones, around the result
        assert f"generation {r.generation}<br/>predicted " in body
        assert f"fitness {r.best_fitness:.3g}" in body
    # Opens on the last improvement (the result), said beneath it.
    last = int(imp["generation"].iloc[-1])
    slider = at.select_slider(key="timeline:0:generation")
    assert slider.value == last
    assert shown(at).startswith(f"generation {last} · predicted ")
    # The slider moves the frame shown.
    second = int(imp["generation"].iloc[1])
    slider.set_value(second).run()
    assert not at.exception, at.exception
    assert shown(at).startswith(f"generation {second} · ")
    # Step buttons: one improvement back.
    next(b for b in at.button if b.label == "◀").click().run()
    assert shown(at).startswith(f"generation {int(imp['generation'].iloc[0])} · ")
    next(b for b in at.button if b.label == "▶").click().run()
    assert shown(at).startswith(f"generation {second} · ")


def test_a_point_clicked_on_the_fitness_curve_shows_its_frame(app, seeded):
    home, cid = seeded
    imp = history.improvements(Store(home / "latentfuzz.duckdb"), cid, 0)
    at = app("campaign.py", id=cid, tab="Seed detail", seed="0")
    curve = next(c for c in at.get("vega_lite_chart") if '"pick"' in c.proto.spec)
    assert '"on":"click"' in curve.proto.spec.replace(" ", "")
    third = int(imp["generation"].iloc[2])
    # As the browser reports a click on the point of generation `third`.
    at.session_state["timeline:0:curve"] = {"selection": {"pick": [{"generation": third}]}}
    at.run()
    assert not at.exception, at.exception
    assert at.select_slider(key="timeline:0:generation").value == third
    assert shown(at).startswith(f"generation {third} · ")
    # The selection stays set across reruns: the slider, moved since, is not pinned back.
    at.select_slider(key="timeline:0:generation").set_value(int(imp["generation"].iloc[0])).run()
    assert shown(at).startswith(f"generation {int(imp['generation'].iloc[0])} · ")


def test_a_generation_without_improvement_shows_the_best_image_it_had():
    assert shown_at([1, 2, 5, 9], 7) == 5 and shown_at([1, 2, 5, 9], 9) == 9
    assert shown_at([3, 5], 1) == 3
    assert picked_generation({"selection": {"pick": [{"generation": 4.0}]}}) == 4
    assert picked_generation({"selection": {"pick": []}}) is None
    assert picked_generation(None) is None


def test_frames_are_enlarged_by_whole_factors_without_smoothing():
    digit = Image.new("L", (28, 28))
    digit.putpixel((3, 4), 255)
    big = enlarged(digit)
    assert big.size == (112, 112)  # 4x: the first whole factor reaching 96 px
    assert set(np.unique(np.asarray(big))) == {0, 255}  # no grey: nearest neighbour
    assert enlarged(Image.new("RGB", (224, 224))).size == (224, 224)


def strip_of(at) -> tuple[list[str], str | None]:
    """The generations of the strip's frames, in order, and the one outlined."""
    (strip,) = at.get("html")
    cells = re.findall(r"<figure.*?</figure>", strip.proto.body)
    gens = [re.search(r"generation (\d+)", c).group(1) for c in cells]
    mine = [g for g, c in zip(gens, cells, strict=True) if "outline:3px" in c]
    assert len(mine) == 1, mine
    return gens, mine[0]


def test_the_strip_follows_the_slider_whole_frames_around_the_chosen_one(app, seeded):
    """Found by a new user's walk: with the slider on generation 13 the strip showed
    generations 1-8 in a row that scrolled, the chosen frame out of view and the last one
    cut in half at the column's edge."""
    home, cid = seeded
    imp = history.improvements(Store(home / "latentfuzz.duckdb"), cid, 0)
    gens = [int(g) for g in imp["generation"]]
    assert len(gens) > STRIP_FRAMES + 2  # enough for a window in the middle
    at = app("campaign.py", id=cid, tab="Seed detail", seed="0")
    slider = at.select_slider(key="timeline:0:generation")
    assert slider.label == f"Improvement {len(gens)} of {len(gens)} (generation {gens[-1]})"
    for i in (len(gens) - 1, len(gens) // 2, 0, 1):
        at.select_slider(key="timeline:0:generation").set_value(gens[i]).run()
        assert not at.exception, at.exception
        shown, mine = strip_of(at)
        assert mine == str(gens[i])  # the chosen frame is in the strip, outlined
        assert shown == [str(gens[k]) for k in window(len(gens), i)]
        assert at.select_slider(key="timeline:0:generation").label == (
            f"Improvement {i + 1} of {len(gens)} (generation {gens[i]})"
        )
    (strip,) = at.get("html")
    # Whole frames: the row wraps in a narrow column rather than cutting a frame off.
    assert "overflow-x" not in strip.proto.body and "flex-wrap:wrap" in strip.proto.body
    assert f"improvements 1–{STRIP_FRAMES} of {len(gens)}" in strip.proto.body


def test_the_window_keeps_the_chosen_frame_in_the_middle_where_it_can():
    assert list(window(15, 12)) == [10, 11, 12, 13, 14]
    assert list(window(15, 7)) == [5, 6, 7, 8, 9]
    assert list(window(15, 0)) == [0, 1, 2, 3, 4]
    assert list(window(3, 2)) == [0, 1, 2]
    for n in range(1, 12):
        for i in range(n):
            w = window(n, i)
            assert i in w and len(w) == min(n, STRIP_FRAMES)


def test_the_top2_chart_names_the_expected_class_and_leaves_room_at_its_edges(app, seeded):
    home, cid = seeded
    at = app("campaign.py", id=cid, tab="Seed detail", seed="0")
    chart = next(c for c in at.get("vega_lite_chart") if '"field": "rank"' in c.proto.spec)
    rows = b"".join(d.data.data for d in chart.proto.datasets)  # Arrow: strings kept raw
    assert b" (expected)" in rows
    spec = json.loads(chart.proto.spec)
    assert spec["encoding"]["x"]["scale"]["padding"] > 0  # the last points not half cut
    assert spec["encoding"]["y"]["scale"]["padding"] > 0


def test_where_the_expected_class_leaves_the_top_two_its_line_stopping_is_explained():
    import pandas as pd

    names = tuple(str(i) for i in range(10))
    gens = pd.DataFrame(
        {
            "generation": [1, 2, 3, 4],
            "top1_label": [7, 7, 9, 9],
            "top2_label": [1, 9, 7, 4],
        }
    )
    assert expected_gone(gens.iloc[:3], 7, names) is None
    note = expected_gone(gens, 7, names)
    assert note.startswith("The expected class 7 is not among the two most likely")
    assert "from generation 4 on" in note and "stops there" in note
