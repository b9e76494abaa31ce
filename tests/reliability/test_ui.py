"""`latentfuzz ui` started from /tmp listens on 127.0.0.1 only, with its settings explicit."""

from __future__ import annotations

import signal
import socket
import time
import tomllib
import urllib.request

from engine.cli.ui import SETTINGS, command
from engine.core.home import REPO_ROOT as REPO
from tests.helpers import start_cli


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> set[str]:
    """Local addresses (hex, as /proc/net/tcp* write them) in LISTEN state on `port`."""
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                addr, p = local.rsplit(":", 1)
                if state == "0A" and int(p, 16) == port:
                    out.add(addr)
    return out


def test_ui_from_tmp_listens_on_loopback_only(env, home):
    port = free_port()
    proc = start_cli(["ui", "--port", str(port)], env, cwd="/tmp")
    try:
        deadline = time.monotonic() + 120
        while not listening(port):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the dashboard never listened"
            time.sleep(0.2)
        assert listening(port) == {"0100007F"}  # 127.0.0.1, nothing on 0.0.0.0 or ::
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=30) as r:
            assert r.read() == b"ok"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def test_ui_passes_every_setting_and_warns_beyond_loopback(env):
    args = command("127.0.0.1", 8501)
    for k, v in {"server.address": "127.0.0.1", **SETTINGS}.items():
        assert args[args.index(f"--{k}") + 1] == v
    assert SETTINGS["browser.gatherUsageStats"] == "false"
    assert SETTINGS["server.enableXsrfProtection"] == "true"
    # The shipped config (`streamlit run` from the checkout) says the same.
    toml = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    shipped = {f"{k}.{n}": v for k, t in toml.items() for n, v in t.items()}
    for k in ("server.fileWatcherType", "server.enableXsrfProtection", "server.maxUploadSize"):
        assert str(shipped[k]).lower() == SETTINGS[k], k
    port = free_port()
    proc = start_cli(["ui", "--port", str(port), "--address", "0.0.0.0"], env, cwd="/tmp")
    try:
        line = proc.stderr.readline()
        assert line.startswith("warning: listening on 0.0.0.0") and "no login" in line
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
