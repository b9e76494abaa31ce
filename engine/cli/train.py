"""`latentfuzz train classifier|vae|gan|dm`: train a model on any registered dataset.

Models go to the user's models folder ($LATENTFUZZ_HOME/models, or --home's) unless --out
names another; the architecture follows the dataset's image shape unless named
(engine/train/common.py DEFAULTS). Ctrl-C stops training and keeps the last step's weights.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from engine.cli.common import HomeOpt, console
from engine.core.errors import LatentfuzzError
from engine.core.home import resolve_home

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
Name = Annotated[str | None, typer.Option(help="model name (default: DATASET-KIND)")]


def channels_option(raw: str | None) -> tuple[int, ...] | None:
    if raw is None:
        return None
    try:
        return tuple(int(c) for c in raw.split(","))
    except ValueError:
        raise LatentfuzzError(
            f"--channels {raw!r}: expected comma-separated integers, e.g. 32,64,64"
        ) from None


@train_app.command("classifier")
def train_classifier_cmd(
    dataset: Dataset = "mnist",
    architecture: Annotated[
        str | None,
        typer.Option(
            help="convnet | lenet5 | vgg | resnet (default: convnet for 1x28x28, else vgg)"
        ),
    ] = None,
    epochs: int = 15,
    batch_size: int = 64,
    width: Annotated[
        int | None, typer.Option(help="vgg/resnet: first stage's channels [32]")
    ] = None,
    seed: int = 0,
    name: Annotated[
        str | None, typer.Option(help="model name (default: DATASET-ARCHITECTURE)")
    ] = None,
    out: Out = None,
    default: Default = None,
    data_dir: DataDir = None,
    device: Device = "cpu",
    home: HomeOpt = None,
) -> None:
    """Train a classifier; prints its card's metrics."""
    from engine.train.classifier import train_classifier

    resolve_home(home)
    card = train_classifier(
        dataset, architecture, epochs=epochs, batch_size=batch_size, seed=seed, name=name,
        out=out, default=default, data_dir=data_dir, width=width, device=device,
    )  # fmt: skip
    console.print(
        f"{card['name']}: test accuracy {card['metrics']['test_accuracy']:.4f}, "
        f"{card['inference']}{stopped(card)}"
    )


@train_app.command("vae")
def train_vae_cmd(
    dataset: Dataset = "mnist",
    family: Annotated[
        str | None,
        typer.Option(help="vae (MLP) | convvae (default: vae for 1x28x28, else convvae)"),
    ] = None,
    epochs: int = 150,
    batch_size: int = 128,
    latent: Annotated[
        int | None, typer.Option(help="latent size (default: vae 400, convvae 128)")
    ] = None,
    hidden: Annotated[int | None, typer.Option(help="vae: hidden units [1600]")] = None,
    width: Annotated[int | None, typer.Option(help="convvae: first layer's channels [32]")] = None,
    seed: int = 0,
    classifier: Classifier = None,
    name: Name = None,
    out: Out = None,
    default: Default = None,
    data_dir: DataDir = None,
    device: Device = "cpu",
    home: HomeOpt = None,
) -> None:
    """Train a VAE; prints its card's metrics (viability = reconstruction accuracy)."""
    from engine.train.vae import train_vae

    resolve_home(home)
    card = train_vae(
        dataset, epochs=epochs, batch_size=batch_size, hidden=hidden, latent=latent,
        seed=seed, classifier=classifier, name=name, out=out, default=default,
        data_dir=data_dir, family=family, width=width, device=device,
    )  # fmt: skip
    report_generator(card)


@train_app.command("gan")
def train_gan_cmd(
    dataset: Dataset = "mnist",
    family: Annotated[
        str | None, typer.Option(help="gan (MNIST) | dcgan (default: gan for 1x28x28, else dcgan)")
    ] = None,
    epochs: int = 80,
    batch_size: int = 64,
    latent: Annotated[int | None, typer.Option(help="latent size [100]")] = None,
    width: Annotated[int | None, typer.Option(help="channels next to the image [64]")] = None,
    seed: int = 0,
    classifier: Classifier = None,
    name: Name = None,
    out: Out = None,
    default: Default = None,
    data_dir: DataDir = None,
    device: Device = "cpu",
    home: HomeOpt = None,
) -> None:
    """Train a conditional GAN (discriminator kept); prints its card's metrics."""
    from engine.train.gan import train_gan

    resolve_home(home)
    card = train_gan(
        dataset, epochs=epochs, batch_size=batch_size, latent=latent, width=width, seed=seed,
        classifier=classifier, name=name, out=out, default=default, data_dir=data_dir,
        family=family, device=device,
    )  # fmt: skip
    report_generator(card)


@train_app.command("dm")
def train_dm_cmd(
    dataset: Dataset = "mnist",
    epochs: int = 30,
    batch_size: int = 64,
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
    seed: int = 0,
    classifier: Classifier = None,
    name: Name = None,
    out: Out = None,
    default: Default = None,
    data_dir: DataDir = None,
    device: Device = "cpu",
    home: HomeOpt = None,
) -> None:
    """Train the class-conditional diffusion model (diffusers UNet2DModel + DDIM)."""
    from engine.train.dm import train_dm

    resolve_home(home)
    card = train_dm(
        dataset, epochs=epochs, batch_size=batch_size, channels=channels_option(channels),
        sample_side=resolution, steps=steps, guidance=guidance, seed=seed,
        classifier=classifier, name=name, out=out, default=default, data_dir=data_dir,
        device=device,
    )  # fmt: skip
    report_generator(card)


def stopped(card: dict[str, Any]) -> str:
    t = card["training"]
    if not t.get("interrupted"):
        return ""
    return f" (interrupted after {t['epochs_done']} of {t['epochs']} epochs: card says so)"


def report_generator(card: dict[str, Any]) -> None:
    v = card["metrics"].get("viability")
    how = f"viability {v:.4f}" if v is not None else "viability not measured (no classifier)"
    console.print(
        f"{card['name']}: {how}, latent range {card['latent_range']:.3f}, "
        f"{card['inference']}{stopped(card)}"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(train_app, name="train")
