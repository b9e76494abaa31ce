"""`python -m engine.figures`: see engine/figures/main.py."""

import sys

from engine.core import threads

# Before torch loads (engine.figures.main imports it): libgomp reads it once.
threads.set_wait_policy()

from engine.figures.main import main  # noqa: E402

sys.exit(main())
