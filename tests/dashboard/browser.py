"""What the browser tests share: Debian's Chromium and its flags, waiting for a Streamlit
run to end, picking an option, and what a failing test saw."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

from dashboard.screenshots import ARGS  # Chromium's flags: the same for the screenshots

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


# Streamlit marks its root with the script state; "notRunning" once a run has finished.
IDLE = "document.querySelector('[data-testid=stApp]')?.dataset.testScriptState === 'notRunning'"


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def diagnose(page, shots: Path, name: str, server_log: Path, home: Path) -> str:
    """What a failing browser test saw: page text, server log, launch logs; plus a screenshot."""
    page.screenshot(path=str(shots / f"{name}-failure.png"), full_page=True)
    launch = "\n".join(p.read_text()[-1500:] for p in sorted((home / "launch").glob("*.log")))
    return (
        f"\n--- page text ---\n{page.inner_text('body')[:3000]}"
        f"\n--- streamlit log ---\n{server_log.read_text()[-3000:]}"
        f"\n--- launch logs ---\n{launch}"
        f"\n--- screenshot: {shots / (name + '-failure.png')}"
    )


def open_browser(p):
    """(browser, page): headless Debian Chromium, a 1200 x 800 page."""
    browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
    return browser, browser.new_context(viewport={"width": 1200, "height": 800}).new_page()


def pick(page, label: str, option: str) -> None:
    """Choose `option` in the Streamlit selectbox labelled `label`."""
    page.locator("[data-testid=stSelectbox]").filter(has_text=label).click()
    page.get_by_role("option", name=option, exact=True).click()
    page.wait_for_function(IDLE, timeout=60_000)


# Each answer button binds its key shortcut when it mounts, and Streamlit loads the button
# component lazily, about 0.1 s after the question's text is on screen: a key pressed in
# between reached no handler (the flaky lost first key of the two-labeller test).
ANSWERS_READY = "document.querySelectorAll('[data-testid=stButton]').length >= 14 && " + IDLE


def answers_ready(page) -> None:
    """Wait until the Label page's answer buttons, and so their key shortcuts, are there."""
    page.get_by_text("Which class is this?").wait_for(timeout=60_000)
    page.wait_for_function(ANSWERS_READY, timeout=60_000)
