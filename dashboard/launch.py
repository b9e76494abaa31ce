"""Starting and stopping campaigns from the dashboard.

A campaign always runs in its own process (`latentfuzz run`), never in the Streamlit script
thread: the page stays responsive, a browser refresh does not kill it, and the store's
concurrency contract (store/CONTRACT.md) is the same as for a campaign started by hand.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import yaml

from dashboard import launcher
from engine.api import CampaignConfig, new_campaign_id
from store import liveness


def launch(cfg: CampaignConfig, home: Path) -> str:
    """Start the campaign of `cfg`, as `resolve` returned it (checked, with what it
    derives: an escape campaign's seeds), and return its id. The page resolves once, at
    Launch: this resolved it again, loading every model a second time before the process
    started (and the process loads them once more)."""
    cid = new_campaign_id()
    cfg_path = log_path(home, cid).with_suffix(".yaml")
    cfg_path.parent.mkdir(parents=True, exist_ok=True)
    cfg_path.write_text(yaml.safe_dump(cfg.model_dump(), sort_keys=False))
    _start(home, cid, ["run", "--config", str(cfg_path), "--id", cid], "w")
    return cid


def log_path(home: Path, cid: str) -> Path:
    """The output of the process this dashboard started for `cid` (launch or resume)."""
    return home / "launch" / f"{cid}.log"


def launched(home: Path, cid: str) -> bool:
    """Whether this dashboard launched (or resumed) campaign `cid`: its log exists from the
    moment its process is started, empty until the process writes."""
    return log_path(home, cid).exists()


def launch_log(home: Path, cid: str) -> str:
    path = log_path(home, cid)
    return path.read_text() if path.exists() else ""


def stop(home: Path, cid: str) -> bool:
    """Ask a running campaign to stop cleanly (the CLI treats SIGTERM as Ctrl-C). Signals
    only the campaign's own process, verified by its lock and start time, never a bare
    stored pid that may belong to another process by now (store/liveness.py)."""
    return liveness.stop(home, cid, signal.SIGTERM)


def resume(home: Path, cid: str) -> None:
    """Continue a crashed or interrupted campaign in its own process (`latentfuzz resume`)."""
    _start(home, cid, ["resume", cid], "a")


def _start(home: Path, cid: str, args: list[str], mode: str) -> None:
    """`latentfuzz ARGS --home HOME --quiet` in its own session (it survives the page's
    rerun and Streamlit's restarts), its output in the campaign's launch log: forked by
    the warm launcher (dashboard/launcher.py) when it can, else a new interpreter."""
    log_path(home, cid).parent.mkdir(parents=True, exist_ok=True)
    argv = [*args, "--home", str(home), "--quiet"]
    open(log_path(home, cid), mode).close()  # exists from now: launched() says so
    if launcher.run(argv, log_path(home, cid)) is not None:
        return
    with open(log_path(home, cid), "a") as log:
        subprocess.Popen(
            [sys.executable, "-m", "engine.entry", *argv],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def failure(log: str) -> str:
    """The line of a launch log that says why its process failed: the CLI's own one-line
    error, else the last exception line of a traceback, else the log's last line."""
    lines = [x.strip() for x in log.splitlines() if x.strip()]
    for line in reversed(lines):
        head = line.split(":", 1)[0]
        if head.lower() == "error" or (head.endswith(("Error", "Exception")) and " " not in head):
            return line
    return lines[-1] if lines else ""
