"""`latentfuzz ui`: start the dashboard with its security settings passed explicitly.

`streamlit run` reads `.streamlit/config.toml` only from the current directory, so started
anywhere else it listened on every interface, sent usage statistics and took uploads of
any size. Every setting that matters is therefore given on the command line, which holds
from any directory. Listening beyond loopback needs --address and prints a warning:
latentfuzz has no login, and whoever reaches the port can run campaigns and read results.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from engine.cli.common import HomeOpt, err
from engine.core.home import ENV_VAR, REPO_ROOT, resolve_home

LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: What `.streamlit/config.toml` says, passed explicitly (server.headless: no browser
#: opened, no e-mail prompt).
SETTINGS = {
    "server.headless": "true",
    "server.enableXsrfProtection": "true",
    "server.enableCORS": "true",
    "server.maxUploadSize": "500",  # MB: TorchScript classifiers can be large
    "browser.gatherUsageStats": "false",
    "client.toolbarMode": "viewer",
    "theme.base": "light",
}


def command(address: str, port: int) -> list[str]:
    """The streamlit command line."""
    args = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(REPO_ROOT / "dashboard" / "app.py"),
        "--server.address",
        address,
        "--server.port",
        str(port),
    ]
    for k, v in SETTINGS.items():
        args += [f"--{k}", v]
    return args


def ui(
    port: Annotated[int, typer.Option(help="port", min=1, max=65535)] = 8501,
    address: Annotated[
        str, typer.Option(help="interface to listen on; beyond loopback only on purpose")
    ] = "127.0.0.1",
    home: HomeOpt = None,
) -> None:
    """Open the dashboard (loopback only unless --address says otherwise)."""
    if address not in LOOPBACK:
        err.print(
            f"warning: listening on {address}:{port}, beyond this machine. latentfuzz has no "
            "login: anyone who reaches this port can run campaigns, upload models and read "
            "results.",
            markup=False,
            soft_wrap=True,  # one line, whatever the terminal's width
        )
    env = {**os.environ, ENV_VAR: str(resolve_home(home))}
    sys.stdout.flush()
    # exec: the dashboard is this process, so Ctrl-C and a stop signal reach streamlit itself.
    os.execve(sys.executable, command(address, port), env)


def register(app: typer.Typer) -> None:
    app.command()(ui)
