"""`python -m engine.figures`: see engine/figures/main.py."""

import sys

from engine.core import kernels, threads

# Before torch loads (engine.figures.main imports it): libgomp reads the wait policy once,
# torch its kernels' instruction set (the figures repeat on another machine).
threads.set_wait_policy()
kernels.pin()

from engine.figures.main import main  # noqa: E402

sys.exit(main())
