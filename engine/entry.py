"""The `latentfuzz` command's entry point, kept tiny: a Ctrl-C while the CLI itself is
still being imported (typer, rich: the first tenth of a second) ends in one line and exit
130, as everywhere later (engine/cli/main.py main), instead of Python's traceback."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        # Deferred (a Ctrl-C while the CLI itself imports is caught here).
        from engine.cli.main import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    cli_main()


if __name__ == "__main__":  # python -m engine.entry, as the installed script
    main()
