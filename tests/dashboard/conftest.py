"""Fixtures of the browser tests: a Streamlit server of the app on a free port, and its log."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.dashboard.browser import REPO, free_port
from tests.helpers import spawn


@pytest.fixture
def server_log(tmp_path: Path) -> Path:
    """Where the server writes its log (a failing test shows its end)."""
    return tmp_path / "streamlit.log"


@pytest.fixture
def server(home: Path, server_log: Path):
    """The app served by `streamlit run` on `home`: its URL; stopped after the test."""
    port = free_port()
    env = {**os.environ, "LATENTFUZZ_HOME": str(home)}
    with open(server_log, "w") as log:  # the server keeps its own handle
        proc = spawn(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                str(REPO / "dashboard" / "app.py"),
                "--server.port",
                str(port),
                "--logger.level",
                "info",
            ],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.3)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=30)
