"""The settings every `latentfuzz train` command shares (what to train on, for how long,
where the model goes), as one frozen object. A command adds only its model's own sizes.

No torch here: the CLI builds these settings while `latentfuzz --help` stays fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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
