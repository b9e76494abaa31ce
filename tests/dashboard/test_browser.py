"""A real browser (Playwright driving Debian's Chromium, headless) launches a tiny campaign
from the New campaign page and watches it finish on the Campaign page.

`make test` installs Debian's Chromium first (`make chromium`) and runs it with the suite."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser
REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(home: Path):
    port = free_port()
    env = {**os.environ, "LATENTFUZZ_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "dashboard" / "app.py"),
         "--server.port", str(port)],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.3)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=30)


def test_launch_and_watch_a_campaign(server: str, tmp_path: Path):
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: `make test-browser` installs it"
    shots = REPO / "test-artifacts"
    shots.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.goto(f"{server}/new_campaign")
        page.wait_for_selector("h1", timeout=60_000)
        for label, value in (("Seeds", "3"), ("Generations", "40")):
            field = page.get_by_label(label)
            field.fill(value)
            field.press("Enter")
        page.get_by_role("button", name="Launch").click()
        page.wait_for_url("**/campaign?id=*", timeout=60_000)
        page.wait_for_selector("text=Status: finished", timeout=180_000)
        page.wait_for_selector(".vega-embed", timeout=30_000)
        page.wait_for_function("document.querySelectorAll('img').length >= 6", timeout=30_000)
        assert page.locator(".vega-embed").count() >= 1  # convergence chart rendered
        assert page.locator("text=expected").count() >= 1  # gallery captions
        page.screenshot(path=str(shots / "browser-campaign.png"), full_page=True)
        browser.close()
