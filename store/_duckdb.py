"""DuckDB, imported once with Ctrl-C and SIGTERM held (store/interrupts.py `masked`): a
signal landing inside its module's initialisation aborted the process. Every module of the
store imports it from here."""

from store import interrupts

with interrupts.masked():
    import duckdb

__all__ = ["duckdb"]
