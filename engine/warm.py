"""A warm launcher: `latentfuzz` commands started from a process that has already imported
the CLI, torch and the engine (issue 36, point 7: launch to the first generation).

A campaign the dashboard launched spent 1.5 to 2.3 s of its 2.5 to 3 s start-up on the
interpreter and its imports, before it loaded a model. The dashboard starts this process
once (`python -m engine.warm`, dashboard/launcher.py) and asks it for each launch; it
forks, and the copy runs the command with every module already in memory.

- One request a line on stdin, JSON: `{"argv": [...], "log": PATH, "claim": PATH}`; one
  reply a line on stdout: `{"pid": N}` once the command's process exists, or
  `{"error": "..."}`.
- The command runs in a grandchild, in a session of its own (as `start_new_session` made
  it): it outlives this process and the dashboard, and a signal to either is not its.
  Its stdout and stderr go to the log (appended: the dashboard opened it as it should).
- Exactly once: the grandchild deletes the claim file before it runs the command, and runs
  nothing if the file is gone. A dashboard that got no reply deletes it itself before it
  starts the command the plain way, so that a launch is never run twice.
- It only imports before it forks: no Python thread, no store connection, no torch work (GNU
  OpenMP's pool does not survive a fork). `OMP_WAIT_POLICY` is set first, as the entry
  point does, since OpenMP reads it once, when torch loads it.
- It ends when its stdin does: the dashboard that started it has exited (killed too).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import sys
import threading
import traceback

#: What a `run` or `resume` imports on its way to its first generation, in that order.
PRELOAD = (
    "engine.cli.main",
    "engine.campaign.config",
    "engine.campaign.runner",
    "engine.campaign.resume",
)


def preload() -> None:
    # Deferred (the wait policy is set first: OpenMP reads it when torch loads it).
    from engine.core.threads import set_wait_policy

    set_wait_policy()
    for name in PRELOAD:
        importlib.import_module(name)


def spawn(request: dict) -> int:
    """Start `request`'s command in a grandchild of a new session; its pid."""
    argv, log, claim = list(request["argv"]), str(request["log"]), str(request["claim"])
    if threading.active_count() > 1:  # a fork would copy a thread's locks, not the thread
        raise RuntimeError(f"{threading.active_count()} threads in the launcher")
    sys.stdout.flush()
    sys.stderr.flush()
    read, write = os.pipe()
    middle = os.fork()
    if middle == 0:  # the middle child: one more fork, and gone (init reaps the command)
        code = 1
        try:
            os.close(read)
            pid = os.fork()
            if pid == 0:
                os.close(write)
                os.setsid()  # the leader of its own session and group, as a Popen's would be
                _run(argv, log, claim)  # never returns
            os.write(write, str(pid).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as r:
        got = r.read()
    os.waitpid(middle, 0)
    if not got:
        raise RuntimeError("the launcher's fork failed")
    return int(got)


def _run(argv: list[str], log: str, claim: str) -> None:
    """The grandchild: claim the launch, take the log as stdout and stderr, run the
    command as `latentfuzz ARGV`, exit with its code."""
    code = 0
    try:
        # The log first: nothing of this copy's may reach the launcher's reply pipe.
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(null)
        os.close(out)
        try:
            os.unlink(claim)
        except FileNotFoundError:
            os._exit(0)  # taken back by the dashboard, which started it itself
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        sys.argv = ["latentfuzz", *argv]
        # Deferred (imported before the fork: this finds it in memory).
        from engine.entry import main

        main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - the command's own traceback, into its log
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed log: nothing left to say
                stream.flush()
        os._exit(code)


def serve(requests, replies) -> None:
    """Answer each request line of `requests` on `replies`, until its end."""
    for line in requests:
        if not line.strip():
            continue
        try:
            reply = {"pid": spawn(json.loads(line))}
        except Exception as e:  # noqa: BLE001 - said to the dashboard, which starts it itself
            reply = {"error": f"{type(e).__name__}: {e}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def main() -> None:
    # Ctrl-C at the dashboard's terminal is the dashboard's: it ends this through stdin.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    preload()
    sys.stdout.write(json.dumps({"ready": os.getpid()}) + "\n")
    sys.stdout.flush()
    serve(sys.stdin, sys.stdout)


if __name__ == "__main__":
    main()
