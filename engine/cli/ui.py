"""`latentfuzz ui`: start the dashboard with its security settings passed explicitly.

`streamlit run` reads `.streamlit/config.toml` only from the current directory, so started
anywhere else it listened on every interface, sent usage statistics and took uploads of
any size. Every setting that matters is therefore given on the command line, which holds
from any directory. Listening beyond loopback needs --address and prints a warning:
latentfuzz has no login, and whoever reaches the port can run campaigns and read results.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
from typing import Annotated

import typer

from engine.cli.common import HomeOpt, err
from engine.core.errors import LatentfuzzError
from engine.core.home import ENV_VAR, REPO_ROOT, resolve_home
from engine.core.untrusted import quote

LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: What `.streamlit/config.toml` says, passed explicitly (server.headless: no browser
#: opened, no e-mail prompt). A flag outranks every config file, also the one streamlit
#: reads from the directory `ui` is started in: there `developmentMode = true` crashed
#: it with a traceback (it conflicts with a port given).
SETTINGS = {
    "global.developmentMode": "false",
    "server.headless": "true",
    "server.enableXsrfProtection": "true",
    "server.enableCORS": "true",
    "server.maxUploadSize": "500",  # MB: TorchScript classifiers can be large
    "browser.gatherUsageStats": "false",
    "client.toolbarMode": "viewer",
    "theme.base": "light",
    # Each new browser session scanned every loaded module to watch its source file: 0.3 s
    # of every page's first load (docs/measured/dashboard.md).
    "server.fileWatcherType": "none",
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


def check_address(address: str, port: int) -> None:
    """LatentfuzzError in one line unless this machine can listen on `address`:`port`.
    Streamlit found out only once started, and `--address 999.1.1.1` ended in its
    traceback (socket.gaierror)."""
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError, ValueError):
        raise LatentfuzzError(
            f"--address {quote(address)} is neither an IP address nor a host name that "
            "resolves; give one of this machine's addresses, e.g. 127.0.0.1 (this machine "
            "only) or 0.0.0.0 (every interface)"
        ) from None
    family, kind, proto, _, where = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as streamlit's server
        try:
            probe.bind(where)
        except OSError as e:
            why = {
                errno.EADDRINUSE: f"port {port} is in use; give another --port",
                errno.EADDRNOTAVAIL: "it is not an address of this machine; give one that is, "
                "e.g. 127.0.0.1",
                errno.EACCES: f"port {port} needs privileges; give a port above 1023",
            }.get(e.errno, f"{e.strerror or e}; give another --address or --port")
            raise LatentfuzzError(f"cannot listen on {quote(address)}:{port}: {why}") from None


def ui(
    port: Annotated[int, typer.Option(help="port", min=1, max=65535)] = 8501,
    address: Annotated[
        str, typer.Option(help="interface to listen on; beyond loopback only on purpose")
    ] = "127.0.0.1",
    home: HomeOpt = None,
) -> None:
    """Open the dashboard (loopback only unless --address says otherwise)."""
    check_address(address, port)
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
