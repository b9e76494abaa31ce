"""The settings every `latentfuzz train` command shares (what to train on, for how long,
where the model goes), as one frozen object. A command adds only its model's own sizes.

No torch here: the CLI builds these settings while `latentfuzz --help` stays fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.core.errors import ConfigError
from engine.core.untrusted import quote


@dataclass(frozen=True)
class TrainSettings:
    """One training run's shared settings.

    Attributes:
        dataset: a registered dataset name.
        epochs: passes over the training split.
        batch_size: images per optimisation step.
        seed: seeds torch and the run's generator (batch order, noise, augmentation).
        name: the model's name; None: the command's (DATASET-KIND or DATASET-ARCHITECTURE).
        out: the models folder; None: the user's ($LATENTFUZZ_HOME/models).
        default: make it the dataset's default model of its kind; None: yes when the
            dataset has none yet.
        data_dir: the folder of the dataset's files.
        device: cpu, cuda or cuda:N.
        classifier: generators only: the classifier that measures viability; None: the
            dataset's default.
        fp16: store the weights as fp16 (the zoo's default).
    """

    dataset: str
    epochs: int
    batch_size: int
    seed: int = 0
    name: str | None = None
    out: Path | None = None
    default: bool | None = None
    data_dir: str | None = None
    device: str = "cpu"
    classifier: str | None = None
    fp16: bool = True


@dataclass(frozen=True)
class Pollution:
    """SINVAD's polluted training data: a share `rate` of class `source`'s training
    images relabelled `target` (`--pollute SOURCE:TARGET:RATE`).

    Attributes:
        source: the class whose images are relabelled.
        target: the label they get.
        rate: the share relabelled, in (0, 1]; exactly round(rate x images of source).
    """

    source: int
    target: int
    rate: float

    def __str__(self) -> str:
        return f"{self.source}:{self.target}:{self.rate:g}"


def parse_pollution(raw: str | None) -> Pollution | None:
    """`--pollute A:B:RATE` as a Pollution (None when not given); a one-line ConfigError
    for a wrong form, A == B or a rate outside (0, 1]. Class indices are checked against
    the dataset by the training command, which knows its classes."""
    if raw is None:
        return None
    parts = raw.split(":")
    try:
        if len(parts) != 3:
            raise ValueError
        source, target, rate = int(parts[0]), int(parts[1]), float(parts[2])
    except ValueError:
        raise ConfigError(
            f"--pollute {quote(raw)}: expected SOURCE:TARGET:RATE, class indices and a share, "
            "e.g. 7:1:0.1 (relabel 10% of class 7's training images as 1)"
        ) from None
    if source == target:
        raise ConfigError(
            f"--pollute {quote(raw)}: source and target are both class {source}; relabelling "
            "a class as itself changes nothing, name two different classes"
        )
    if not 0 < rate <= 1:  # NaN fails this too
        raise ConfigError(
            f"--pollute {quote(raw)}: rate {rate:g} is outside (0, 1]; give the share of "
            f"class {source}'s training images to relabel, e.g. {source}:{target}:0.1"
        )
    return Pollution(source, target, rate)
