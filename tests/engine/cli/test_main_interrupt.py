"""A signal that lands inside a DuckDB query reaches the CLI as DuckDB's own
RuntimeError('Query interrupted'), not as KeyboardInterrupt: it ends in one line and
exit 130, as any other interrupt of a command does."""

from __future__ import annotations

import threading

import duckdb
import pytest
import typer

from engine.cli import main as cli_main


def interrupted_query() -> None:
    """A real one: what DuckDB raises when Ctrl-C lands in a running query (interrupted
    from another thread until it stops, however slowly the query starts under load)."""
    con = duckdb.connect()
    done = threading.Event()

    def interrupt() -> None:
        while not done.wait(0.05):
            con.interrupt()

    t = threading.Thread(target=interrupt, daemon=True)
    t.start()
    try:
        con.execute("SELECT sum(range * range) FROM range(100000000000)").fetchall()
    finally:
        done.set()
        t.join()


def interrupts() -> list[BaseException]:
    """What DuckDB raises for a signal inside a query (as `latentfuzz import` stopped by
    SIGTERM in its CHECKPOINT raised it), and for an interrupted connection (a real one)."""
    try:
        interrupted_query()
    except duckdb.InterruptException as e:
        return [RuntimeError("Query interrupted"), e]
    raise AssertionError("the query was not interrupted")


@pytest.mark.parametrize("which", [0, 1])
def test_a_query_interrupted_by_a_signal_is_one_line_and_exit_130(monkeypatch, capsys, which):
    raised = interrupts()[which]

    def command(standalone_mode: bool) -> None:
        raise raised

    monkeypatch.setattr(typer.main, "get_command", lambda app: command)
    monkeypatch.setattr(cli_main, "escape_help", lambda command: None)
    with pytest.raises(SystemExit) as exit_:
        cli_main.main()
    assert exit_.value.code == 130
    said = capsys.readouterr().err
    assert said.strip() == "interrupted" and "Traceback" not in said
