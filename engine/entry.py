"""The `latentfuzz` command's entry point (and `python -m engine.entry`), kept tiny: its
first instruction takes Ctrl-C and SIGTERM, before the CLI, typer and rich are imported.

Until the command's own code runs (the imports, typer building and parsing the command
line: a second or more on a loaded machine), a signal ends the process at once with one
line and exit 130; after, it raises KeyboardInterrupt as the command expects
(store/interrupts.py). Before, a Ctrl-C there was lost in a process that had inherited
SIGINT ignored (a background job), and SIGTERM killed it without a word.

Its second sets OpenMP's wait policy to passive, before anything imports torch, unless the
user set one (engine/core/threads.py): spinning OpenMP threads beside a CPU-bound neighbour
made a campaign 100x slower. Processes the command starts (a grid's workers) inherit it."""

from __future__ import annotations

import sys

from store import interrupts  # stdlib only: the package's other names load on first use


def main() -> None:
    undo = interrupts.cli_start_up(_command_running)
    try:
        try:
            # Deferred (the signals are taken first). Stdlib only: torch is not loaded yet.
            from engine.core.threads import set_wait_policy

            set_wait_policy()
            # Deferred (the signals are taken first; this import takes a second under load).
            from engine.cli.main import main as cli_main
        except KeyboardInterrupt:  # raised by a handler of a caller's own (a test's)
            sys.stderr.write("interrupted\n")
            sys.exit(130)
        cli_main()
    finally:
        undo()  # the process ends here; a caller that goes on (a test) gets its own back


def _command_running(frame: object) -> bool:
    """Whether a command's own function (registered with typer, or what it wraps) is on
    the stack of `frame`: from there a signal is the command's to handle."""
    cli = sys.modules.get("engine.cli.main")
    app = getattr(cli, "app", None)
    if app is None:  # still importing the CLI
        return False
    try:
        codes = _codes(app)
    except Exception:  # noqa: BLE001 - a typer of another shape: the command's, as before
        return True
    while frame is not None:
        if frame.f_code in codes:  # type: ignore[attr-defined]
            return True
        frame = frame.f_back  # type: ignore[attr-defined]
    return False


def _codes(app) -> set:
    codes = set()
    for info in [*app.registered_commands, app.registered_callback]:
        fn = getattr(info, "callback", None)
        while fn is not None:
            if hasattr(fn, "__code__"):
                codes.add(fn.__code__)
            fn = getattr(fn, "__wrapped__", None)
    for group in app.registered_groups:
        codes |= _codes(group.typer_instance)
    return codes


if __name__ == "__main__":  # python -m engine.entry, as the installed script
    main()
