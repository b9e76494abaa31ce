"""One repair run's settings, as one frozen object checked before anything is read.

No torch here: the CLI builds these settings while `latentfuzz --help` stays fast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from engine.core.errors import ConfigError

#: The arms a run trains: the repair and its two controls (Argus' "Random", and the same
#: campaign's failures without the validity filter).
REPAIR, RANDOM, NO_VALIDITY = "repair", "random", "no-validity"
ARMS = (REPAIR, RANDOM, NO_VALIDITY)
#: Most epochs, replay ratio and fresh seeds an option may ask for: beyond them a typo
#: (an extra zero) would run for days rather than fail.
MAX_EPOCHS, MAX_RATIO, MAX_FRESH_SEEDS = 1000, 1000.0, 100_000


@dataclass(frozen=True)
class RepairSettings:
    """What to repair, with what, and how.

    Attributes:
        classifier: the zoo or home classifier to repair (its card has an architecture).
        campaign: take auto-validated failures from this campaign, or
        study: take human-validated, label-preserving failures from this validity study.
        validators: NAME -> threshold (None: the filter's default), as parse_validators
            gives; required with ``campaign``, optional with ``study`` (then it filters
            the fresh campaign's failures only).
        replay: replayed training images per failure in the mix (capped at the split).
        epochs, lr, batch_size: the fine-tuning.
        seed: seeds the one generator every draw comes from (pool, replay, batches,
            shifts, the no-validity draw); the fresh campaigns use ``fresh_seed``.
        name: the repaired model's name; None: ``<classifier>-repair-<source>``.
        controls: also train and measure the two controls.
        fresh_seeds: seeds of the fresh campaign (0: no fresh campaigns); None: the
            source campaign's.
        fresh_generations: its generation budget; None: the source campaign's.
        fresh_seed: its random seed; None: the source campaign's + 1.
        device: cpu, cuda or cuda:N for the fine-tuning and the campaigns.
        calibrated_on: NAME -> the validity study its threshold was fitted on
            (`NAME=calibrated:STUDY`), recorded in the lineage.
    """

    classifier: str
    campaign: str | None = None
    study: str | None = None
    validators: dict[str, float | None] = field(default_factory=dict)
    replay: float = 10.0
    epochs: int = 5
    lr: float = 5e-4
    batch_size: int = 64
    seed: int = 0
    name: str | None = None
    controls: bool = True
    fresh_seeds: int | None = None
    fresh_generations: int | None = None
    fresh_seed: int | None = None
    device: str = "cpu"
    calibrated_on: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.campaign is None) == (self.study is None):
            raise ConfigError(
                "repair takes its failures from one source; give --from-campaign C "
                "--validator NAME, or --from-study S"
            )
        if self.campaign is not None and not self.validators:
            raise ConfigError(
                f"--from-campaign {self.campaign}: no --validator; name the validity filter "
                "that auto-validates its failures, e.g. --validator ssim-nearest"
            )
        checks = (
            ("--epochs", self.epochs, 1 <= self.epochs <= MAX_EPOCHS, f"1 to {MAX_EPOCHS}"),
            ("--batch-size", self.batch_size, 2 <= self.batch_size <= 100_000, "2 to 100,000"),
            (
                "--replay",
                self.replay,
                math.isfinite(self.replay) and 0 <= self.replay <= MAX_RATIO,
                f"0 to {MAX_RATIO:g} training images per failure",
            ),
            ("--lr", self.lr, math.isfinite(self.lr) and 0 < self.lr <= 1, "above 0, at most 1"),
            ("--seed", self.seed, 0 <= self.seed < 2**63, "0 to 2^63 - 1"),
        )
        for opt, value, ok, expected in checks:
            if not ok:
                raise ConfigError(f"{opt} is {value!r}, expected {expected}")
        for opt, value in (
            ("--fresh-seeds", self.fresh_seeds),
            ("--fresh-generations", self.fresh_generations),
        ):
            lo = 0 if opt == "--fresh-seeds" else 1
            if value is not None and not lo <= value <= MAX_FRESH_SEEDS:
                raise ConfigError(f"{opt} is {value!r}, expected {lo} to {MAX_FRESH_SEEDS:,}")

    @property
    def source(self) -> str:
        """'campaign ID' or 'study ID', as reports say it."""
        return f"campaign {self.campaign}" if self.campaign else f"study {self.study}"
