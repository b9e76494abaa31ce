"""New campaign launches a pixel-space baseline with its own generator, whatever the
generator box shows (a named generator is refused for it by the engine)."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.pages.test_new_campaign import form, launch_button, strategy_box  # noqa: F401


def test_a_pixel_space_strategy_launches_on_the_pixel_generator(form):  # noqa: F811
    strategy_box(form).set_value("fgsm").run()
    launch_button(form).click().run()
    assert not form.exception, form.exception
    assert not form.error, form.error[0].value
    (args,) = form.launched
    cfg = yaml.safe_load(Path(args[args.index("--config") + 1]).read_text())
    assert cfg["strategy"] == "fgsm" and cfg["generator"] == "pixel"
