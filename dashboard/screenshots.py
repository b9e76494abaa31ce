"""Screenshots of every page for the docs: `python -m dashboard.screenshots [OUT_DIR]`.

Seeds a scratch home with two small campaigns (VAE and GAN) and a validity study of their
failures whose answers are *simulated* (two made-up labellers, seeded: the expected class
70%, "not a valid image" 20%, another class 10%), serves the app on a free local port and
captures each page with Playwright driving Debian's Chromium (`make chromium` installs it).

`python -m dashboard.screenshots OUT_DIR --home DIR --page compare` captures pages of an
existing data directory instead (the README's Compare screenshot shows the effectiveness
study's home), leaving it untouched. `--page escape='campaign?id=ID' --section "Class
escape"` saves just that section of a page as escape.png.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def simulated_study(home: Path) -> tuple[str, str]:
    """A study of every campaign's failures, fully answered by two simulated labellers."""

    # Deferred (start-up time: loads numpy).
    import numpy as np

    # Deferred (start-up time: loads torch, scipy, duckdb).
    from engine.api import INVALID, StudyConfig, create_study
    from store import Store, judging
    from store import campaigns as sc
    from store import labels as ls

    store = Store(home / "latentfuzz.duckdb")
    ids = sc.list_campaigns(store)["id"].tolist()
    sid = create_study(store, home, StudyConfig(campaigns=ids, name="MNIST failures", k=2))
    items = ls.items(store, sid).set_index("item_id")
    rng = np.random.default_rng(0)
    for who in ("labeller A", "labeller B"):
        judging.join(store, sid, who)
        while (i := judging.next_item(store, sid, who)) is not None:
            expected, u = int(items.loc[i, "expected"]), rng.random()
            other = (expected + 1 + int(rng.integers(9))) % 10
            value = expected if u < 0.7 else INVALID if u < 0.9 else other
            judging.answer(store, sid, i, who, value, datetime.now())
    # A fresh study for the Label page's screenshot: nobody has answered it yet.
    return sid, create_study(store, home, StudyConfig(campaigns=ids, name="to label", k=2))


def seeded_home() -> tuple[Path, dict[str, str]]:
    """A scratch home with two campaigns and two studies; the pages to capture."""
    # Deferred (start-up time: loads torch, duckdb, pyarrow).
    from engine.api import parse_config, run_campaign

    home = Path(tempfile.mkdtemp(prefix="latentfuzz-shots-"))
    for gen in ("gan", "vae"):  # the VAE campaign last: the one the Campaign page shows
        cfg = {"seeds": 8, "seed": 1, "generator": gen, "name": f"MNIST {gen.upper()}, strong"}
        cid = run_campaign(parse_config(cfg), home).campaign_id
    answered, sid = simulated_study(home)
    return home, {
        "campaigns": "",
        "new_campaign": "new_campaign",
        "campaign": f"campaign?id={cid}",
        "compare": "compare",
        "studies": f"studies?study={answered}",
        "label": f"label?study={sid}&labeller=you",
        "models": "models",
    }


def capture(
    home: Path, pages: dict[str, str], out: Path, section: str | None = None, height: int = 560
) -> None:
    """Serve the app on `home` and save each page (name -> URL path) as OUT/name.png; with
    `section`, only the `height` pixels from the heading of that text down."""
    # Deferred (playwright: an optional extra).
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(REPO / "dashboard" / "app.py"),
            "--server.port",
            str(port),
        ],
        cwd=REPO,
        env={**os.environ, "LATENTFUZZ_HOME": str(home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(6)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            for name, path in pages.items():
                page.goto(f"http://127.0.0.1:{port}/{path}")
                page.wait_for_selector("h1", timeout=60_000)
                time.sleep(3)  # charts and images settle
                clip = None
                if section:
                    head = page.get_by_role("heading", name=section).first
                    head.wait_for(timeout=60_000)
                    time.sleep(2)
                    # Streamlit scrolls an inner container, not the window: bring the
                    # heading to the top of the viewport and clip the viewport.
                    head.evaluate("e => e.scrollIntoView({block: 'start'})")
                    time.sleep(1)
                    y = max(0, head.bounding_box()["y"] - 10)
                    clip = {"x": 0, "y": y, "width": 1400, "height": min(height, 1000 - y)}
                page.screenshot(path=str(out / f"{name}.png"), full_page=clip is None, clip=clip)
                print(out / f"{name}.png")
            browser.close()
    finally:
        server.terminate()


def main(argv: list[str]) -> None:

    ap = argparse.ArgumentParser(prog="python -m dashboard.screenshots")
    ap.add_argument("out", nargs="?", type=Path, default=REPO / "docs" / "screenshots")
    ap.add_argument("--home", type=Path, help="capture this data directory as it is")
    ap.add_argument(
        "--page", action="append", help="with --home: page name, or NAME=URL-PATH (repeatable)"
    )
    ap.add_argument("--section", help="only the part of the page from this heading down")
    args = ap.parse_args(argv)
    if args.home:
        pages = {}
        for n in args.page or ["compare"]:
            name, _, path = n.partition("=")
            pages[name] = path or ("" if name == "campaigns" else name)
        capture(args.home, pages, args.out, args.section)
        return
    home, pages = seeded_home()
    try:
        capture(home, pages, args.out)
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
