"""`latentfuzz train classifier|vae|gan|dm`: train a model on any registered dataset.

Models go to the user's models folder ($LATENTFUZZ_HOME/models, or --home's) unless --out
names another; the architecture follows the dataset's image shape unless named
(engine/train/common.py DEFAULTS). Ctrl-C stops training and keeps the last step's weights.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from engine.cli.common import HomeOpt, console, typer_signature
from engine.core.errors import LatentfuzzError
from engine.core.home import resolve_home
from engine.train.settings import TrainSettings, parse_pollution

train_app = typer.Typer(
    no_args_is_help=True,
    help="Train models on any dataset (weights + model card, in your models folder).",
)

Dataset = Annotated[
    str, typer.Option(help="a registered dataset: mnist, mnist-idx, cifar10, svhn, ...")
]
DataDir = Annotated[str | None, typer.Option(help="folder of the dataset's files")]
Out = Annotated[
    Path | None,
    typer.Option(help="models folder (default: $LATENTFUZZ_HOME/models); make models: models/"),
]
Default = Annotated[
    bool | None,
    typer.Option(
        "--default/--no-default",
        help="the dataset's default model of its kind (default: yes if it has none yet)",
    ),
]
Device = Annotated[str, typer.Option(help="cpu | cuda | cuda:N")]
Classifier = Annotated[
    str | None,
    typer.Option(help="classifier that measures viability (default: the dataset's default)"),
]


def shared_options(
    epochs: int, batch_size: int, name_default: str = "DATASET-KIND", generator: bool = True
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a `train` command the options every one of them takes, with this command's
    defaults for --epochs and --batch-size.

    The command is written as ``cmd(settings: TrainSettings, <its own options>)``; the
    wrapper typer sees takes --dataset, the command's own options, then --epochs,
    --batch-size, --seed, --classifier (generators), --name, --out, --default/--no-default,
    --data-dir, --device and --home; it resolves --home and calls the command with the
    shared ones gathered into one ``TrainSettings``.
    """
    P = inspect.Parameter

    def option(name: str, annotation: Any, default: Any) -> inspect.Parameter:
        return P(name, P.KEYWORD_ONLY, annotation=annotation, default=default)

    name_opt = Annotated[str | None, typer.Option(help=f"model name (default: {name_default})")]
    shared = [
        option("epochs", int, epochs),
        option("batch_size", int, batch_size),
        option("seed", int, 0),
        *([option("classifier", Classifier, None)] if generator else []),
        option("name", name_opt, None),
        option("out", Out, None),
        option("default", Default, None),
        option("data_dir", DataDir, None),
        option("device", Device, "cpu"),
    ]
    home = option("home", HomeOpt, None)

    def deco(command: Callable[..., None]) -> Callable[..., None]:
        own = list(inspect.signature(command, eval_str=True).parameters.values())[1:]
        params = [
            option("dataset", Dataset, "mnist"),
            *(p.replace(kind=P.KEYWORD_ONLY) for p in own),
            *shared,
            home,
        ]

        @functools.wraps(command)
        def wrapper(**given: Any) -> None:
            resolve_home(given.pop("home"))
            names = {p.name for p in shared} | {"dataset"}
            settings = TrainSettings(**{k: given.pop(k) for k in list(given) if k in names})
            command(settings, **given)

        typer_signature(wrapper, params)
        return wrapper

    return deco


def channels_option(raw: str | None) -> tuple[int, ...] | None:
    """--channels "32,64,64" as a tuple of ints; None when not given."""
    if raw is None:
        return None
    try:
        return tuple(int(c) for c in raw.split(","))
    except ValueError:
        raise LatentfuzzError(
            f"--channels {raw!r}: expected comma-separated integers, e.g. 32,64,64"
        ) from None


@train_app.command("classifier")
@shared_options(15, 64, name_default="DATASET-ARCHITECTURE", generator=False)
def train_classifier_cmd(
    settings: TrainSettings,
    architecture: Annotated[
        str | None,
        typer.Option(
            help="convnet | lenet5 | vgg | resnet (default: convnet for 1x28x28, else vgg)"
        ),
    ] = None,
    width: Annotated[
        int | None, typer.Option(help="vgg/resnet: first stage's channels [32]")
    ] = None,
    pollute: Annotated[
        str | None,
        typer.Option(
            metavar="A:B:RATE",
            help="relabel a share RATE in (0, 1] of class A's training images as B "
            "(seeded by --seed; the card states it): SINVAD's polluted training data",
        ),
    ] = None,
) -> None:
    """Train a classifier; prints its card's metrics."""
    pollution = parse_pollution(pollute)  # before torch loads: a typo fails at once
    # Deferred (start-up time: loads torch, numpy, safetensors).
    from engine.train.classifier import train_classifier  # torch: not for `--help`

    card = train_classifier(settings, architecture, width=width, pollution=pollution)
    p = card.get("pollution")
    said = (
        f", {p['relabelled']} of {p['of']} training images of class {p['source']} "
        f"relabelled {p['target']}"
        if p
        else ""
    )
    console.print(
        f"{card['name']}: test accuracy {card['metrics']['test_accuracy']:.4f}, "
        f"{card['inference']}{said}{stopped(card)}"
    )


@train_app.command("vae")
@shared_options(150, 128)
def train_vae_cmd(
    settings: TrainSettings,
    family: Annotated[
        str | None,
        typer.Option(help="vae (MLP) | convvae (default: vae for 1x28x28, else convvae)"),
    ] = None,
    latent: Annotated[
        int | None, typer.Option(help="latent size (default: vae 400, convvae 128)")
    ] = None,
    hidden: Annotated[int | None, typer.Option(help="vae: hidden units [1600]")] = None,
    width: Annotated[int | None, typer.Option(help="convvae: first layer's channels [32]")] = None,
) -> None:
    """Train a VAE; prints its card's metrics (viability = reconstruction accuracy)."""
    # Deferred (start-up time: loads torch, numpy, safetensors).
    from engine.train.vae import train_vae  # torch: not for `--help`

    report_generator(train_vae(settings, family, hidden=hidden, latent=latent, width=width))


@train_app.command("gan")
@shared_options(80, 64)
def train_gan_cmd(
    settings: TrainSettings,
    family: Annotated[
        str | None, typer.Option(help="gan (MNIST) | dcgan (default: gan for 1x28x28, else dcgan)")
    ] = None,
    latent: Annotated[int | None, typer.Option(help="latent size [100]")] = None,
    width: Annotated[int | None, typer.Option(help="channels next to the image [64]")] = None,
) -> None:
    """Train a conditional GAN (discriminator kept); prints its card's metrics."""
    # Deferred (start-up time: loads torch, numpy, safetensors).
    from engine.train.gan import train_gan  # torch: not for `--help`

    report_generator(train_gan(settings, family, latent=latent, width=width))


@train_app.command("dm")
@shared_options(30, 64)
def train_dm_cmd(
    settings: TrainSettings,
    resolution: Annotated[
        int | None,
        typer.Option(
            help="the UNet's working side (default: 14 for 1x28x28, else the side up to 32)"
        ),
    ] = None,
    channels: Annotated[
        str | None,
        typer.Option(help="UNet channels per level (default: 16,32 for 1x28x28, else 32,64,64)"),
    ] = None,
    steps: Annotated[int, typer.Option(help="default DDIM steps of the model")] = 4,
    guidance: Annotated[float, typer.Option(help="default guidance scale")] = 2.0,
) -> None:
    """Train the class-conditional diffusion model (diffusers UNet2DModel + DDIM)."""
    # Deferred (start-up time: loads torch, numpy, safetensors).
    from engine.train.dm import train_dm  # torch: not for `--help`

    channels_ = channels_option(channels)
    card = train_dm(settings, channels_, sample_side=resolution, steps=steps, guidance=guidance)
    report_generator(card)


def stopped(card: dict[str, Any]) -> str:
    """What a report adds when training was interrupted; empty otherwise."""
    t = card["training"]
    if not t.get("interrupted"):
        return ""
    return f" (interrupted after {t['epochs_done']} of {t['epochs']} epochs: card says so)"


def report_generator(card: dict[str, Any]) -> None:
    """Print a trained generator's viability, latent range and timing."""
    v = card["metrics"].get("viability")
    how = f"viability {v:.4f}" if v is not None else "viability not measured (no classifier)"
    console.print(
        f"{card['name']}: {how}, latent range {card['latent_range']:.3f}, "
        f"{card['inference']}{stopped(card)}"
    )


def register(app: typer.Typer) -> None:
    """Add the `train` group to the app."""
    app.add_typer(train_app, name="train")
