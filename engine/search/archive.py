"""The archive of failing inputs: every distinct failing image a search evaluates.

A GA campaign keeps one result per seed. Differential testing (DiffGAN) wants every
triggering input found, so a campaign with ``archive`` on (the default when it names a
second classifier) keeps each evaluated individual that fails the criterion, once:
duplicates are identical images (the uint8 pixels PNG stores), across the whole campaign,
since a search often re-evaluates an unchanged survivor or a child equal to its parent.

Each entry is one PNG (labelling, validity filters and exports need single files) and one
``archive`` row; entries are numbered in the order they were found.
"""

from __future__ import annotations

import hashlib

import numpy as np
import torch

from engine.core.images import ImageSink
from store import CampaignWriter

#: Bytes of a digest.
DIGEST = 16


def digest(row: np.ndarray) -> bytes:
    """A short key of an array's bytes: sets of them stay small however many rows."""
    return hashlib.blake2b(row.tobytes(), digest_size=DIGEST).digest()


def archive_path(cid: str, entry: int) -> str:
    return f"campaigns/{cid}/archive/{entry:06d}.png"


class Archive:
    """Collects failing inputs of one campaign; deduplicates by image."""

    def __init__(self, cid: str, writer: CampaignWriter, sink: ImageSink) -> None:
        self.cid, self.writer, self.sink = cid, writer, sink
        self.seen: set[bytes] = set()
        self.count = 0
        #: Failing evaluations offered, duplicates included (for the metrics).
        self.offered = 0

    def state_dict(self) -> dict[str, object]:
        """What a checkpoint keeps (engine/campaign/checkpoint.py): the digests seen as rows
        of bytes, the entry count and the failing evaluations offered."""
        seen = sorted(self.seen)
        rows = np.frombuffer(b"".join(seen), dtype=np.uint8).reshape(len(seen), DIGEST).copy()
        return {"seen": torch.from_numpy(rows), "count": self.count, "offered": self.offered}

    def load_state_dict(self, state: dict[str, object]) -> None:
        self.seen = {bytes(row) for row in state["seen"].numpy()}
        self.count, self.offered = int(state["count"]), int(state["offered"])

    def add(
        self,
        g: int,
        seed_idx: torch.Tensor,
        labels: torch.Tensor,
        images: torch.Tensor,
        logits: torch.Tensor,
        logits_b: torch.Tensor | None,
        fitness: torch.Tensor,
        failing: torch.Tensor,
    ) -> int:
        """Archive the failing ones of N evaluated individuals; returns how many were new.

        seed_idx, labels (N,) per individual; images (N, C, H, W) uint8; logits (N, K);
        logits_b (N, K) or None; fitness (N,); failing (N,) bool.
        """
        idx = torch.nonzero(failing).flatten()
        self.offered += len(idx)
        if not len(idx):
            return 0
        arr = images[idx].numpy()
        keep = []
        for i, img in enumerate(arr):  # over the failing ones only, not the population
            key = digest(img)
            if key not in self.seen:
                self.seen.add(key)
                keep.append(i)
        if not keep:
            return 0
        sel = idx[torch.tensor(keep)]
        entries = np.arange(self.count, self.count + len(sel))
        self.count += len(sel)
        paths = [archive_path(self.cid, int(e)) for e in entries]
        self.sink.save(paths, images[sel])
        self.writer.append(
            "archive",
            entry=entries,
            seed_idx=seed_idx[sel].numpy(),
            generation=g,
            label=labels[sel].numpy(),
            pred=logits[sel].argmax(1).numpy(),
            pred_b=None if logits_b is None else logits_b[sel].argmax(1).numpy(),
            fitness=fitness[sel].numpy(),
            image=paths,
        )
        return len(sel)
