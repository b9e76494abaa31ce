"""AppTest of a seed's search history on the Campaign page (issue 36, point 2): every
improvement a frame big enough to see, with its generation, prediction and fitness; the
slider and step buttons move the frame shown; a point clicked on the seed's fitness curve
shows that generation's frame."""

from __future__ import annotations

import base64
import io
import re

import numpy as np
from PIL import Image

from dashboard.timeline import MIN_PX, enlarged, picked_generation, shown_at
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
    assert "overflow-x:auto" in body  # one row that scrolls, not frames squeezed to fit
    pictures = re.findall(r'src="data:image/png;base64,([^"]+)"', body)
    assert len(pictures) == len(imp)
    for b64 in pictures:  # each frame at least 96 px, enlarged without smoothing
        with Image.open(io.BytesIO(base64.b64decode(b64))) as im:
            assert min(im.size) >= MIN_PX
            a = np.asarray(im)
        k = a.shape[0] // 28  # whole blocks of one pixel each: no smoothing
        assert (np.repeat(np.repeat(a[::k, ::k], k, 0), k, 1) == a).all()
    for r in imp.itertuples():
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
