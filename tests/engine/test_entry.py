"""engine/entry.py: until a command's own code runs, a signal ends the CLI at once (the
subprocess cases: tests/reliability/test_signals_under_load.py); from there on it is the
command's, as a KeyboardInterrupt its cleanups see."""

from __future__ import annotations

import sys
from types import SimpleNamespace

from engine import entry


def fake_cli(monkeypatch, command, wrapper=None):
    """engine.cli.main as the entry point finds it: an app with `command` registered
    (through `wrapper`, as start_up_interruptible registers run)."""
    callback = command if wrapper is None else wrapper
    app = SimpleNamespace(
        registered_commands=[SimpleNamespace(callback=callback)],
        registered_callback=None,
        registered_groups=[
            SimpleNamespace(
                typer_instance=SimpleNamespace(
                    registered_commands=[], registered_callback=None, registered_groups=[]
                )
            )
        ],
    )
    monkeypatch.setitem(sys.modules, "engine.cli.main", SimpleNamespace(app=app))


def test_a_signal_is_the_commands_once_its_own_code_runs(monkeypatch):
    def inner():
        return entry._command_running(sys._getframe())

    def command():
        return inner()  # deeper in the command: still its own

    fake_cli(monkeypatch, command)
    assert command() is True
    assert entry._command_running(sys._getframe()) is False  # typer parsing, say


def test_a_wrapped_command_counts_by_what_it_wraps(monkeypatch):
    def command():
        return entry._command_running(sys._getframe())

    def wrapped(*a, **k):  # functools.wraps keeps __wrapped__
        return command(*a, **k)

    wrapped.__wrapped__ = command
    fake_cli(monkeypatch, command, wrapper=wrapped)
    assert command() is True


def test_while_the_cli_is_imported_no_command_runs(monkeypatch):
    monkeypatch.setitem(sys.modules, "engine.cli.main", SimpleNamespace())  # half imported
    assert entry._command_running(sys._getframe()) is False
