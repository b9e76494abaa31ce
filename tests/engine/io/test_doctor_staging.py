"""doctor and an import's staging folders (engine/io/bundle_zip.py): a live import's folder
is not an orphan campaign folder (`--fix` moved it to orphans/ under the import), a killed
import's is named `stale-import` and removed by `--fix`."""

from __future__ import annotations

import fcntl
import os

from engine.io.bundle_zip import OWNER
from engine.io.doctor import check, fix
from store import Store


def test_doctor_names_a_killed_imports_folder_and_leaves_a_live_one_alone(home):
    store = Store(home / "latentfuzz.duckdb")
    root = home / "campaigns"
    live, dead = root / ".import-live", root / ".import-dead"
    for folder in (live, dead):
        folder.mkdir(parents=True)
        (folder / OWNER).write_text("1\n")
    fd = os.open(live / OWNER, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as the import does for as long as it runs
    try:
        found = [(f.kind, f.campaign) for f in check(store, home)]
        assert found == [("stale-import", ".import-dead")]
        done = fix(store, home)
        assert any("left by a killed import" in line for line in done)
        assert live.is_dir() and not dead.exists()
        assert not (home / "orphans").exists()
    finally:
        os.close(fd)
