"""`latentfuzz data`: check a folder of your own images, name it as a dataset, list datasets."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from engine.cli.common import HomeOpt, Table, console, err
from engine.core.errors import ConfigError
from engine.core.home import resolve_home
from engine.core.shapes import check_shape

if TYPE_CHECKING:
    from engine.datasets.imagefolder import Report

data_app = typer.Typer(
    no_args_is_help=True,
    help="Datasets: check a folder of your own images, add it under a name, list datasets.",
)

SizeOpt = Annotated[int, typer.Option(help="side of the square images, in pixels")]
ChannelsOpt = Annotated[int, typer.Option(help="1 (grey) or 3 (RGB)")]
FitOpt = Annotated[
    str, typer.Option(help="crop: centre square, keeps proportions; stretch: whole image")
]
TestDirOpt = Annotated[
    Path | None,
    typer.Option(help="folder of test images, same class folders [default: a hold-out]"),
]
HoldoutOpt = Annotated[
    float, typer.Option(help="share of each class held out for testing (no --test-dir)")
]
SplitSeedOpt = Annotated[int, typer.Option(help="seed of the hold-out split")]
ClassesOpt = Annotated[
    Path | None,
    typer.Option(
        help="class names, one per line: the folders in another order, or new "
        "names for the folders in sorted order [default: DIR/classes.txt]"
    ),
]
#: How many distinct image sizes `data check` lists before summing up the rest.
SIZES_SHOWN = 8


def register(app: typer.Typer) -> None:
    """Add the `data` group to the app."""
    app.add_typer(data_app, name="data")


def _options(size, channels, fit, test_dir, holdout, split_seed, classes) -> dict:
    # Deferred (start-up time: loads torch, numpy, PIL).
    from engine.datasets import read_class_names  # torch: not for `--help`

    opts = {
        "size": size,
        "channels": channels,
        "fit": fit,
        "holdout": holdout,
        "split_seed": split_seed,
        "test_dir": None if test_dir is None else str(test_dir),
    }
    if classes is not None:
        opts["classes"] = list(read_class_names(classes))
        opts["classes_from"] = str(classes)
    return opts


def print_report(root: Path, r: Report, bases: tuple[Path, ...] = (), warn: bool = True) -> None:
    """The report of `data check` and `data add`; rejected files shown relative to `bases`
    (the folders read)."""
    # Deferred (start-up time: loads torch).
    from engine.datasets import printable  # names that are not UTF-8 print as \xNN

    n = {s: sum(c) for s, c in r.counts.items()}
    console.print(
        f"{printable(root)}: {len(r.class_names)} classes, {n['train'] + n['test']} images "
        f"({n['train']} train, {n['test']} test), each becomes "
        f"{' x '.join(map(str, r.shape))} (C x H x W)",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    console.print(f"how: {printable(r.split_rule)}", markup=False, highlight=False, soft_wrap=True)
    t = Table("label", "class", "folder", "train", "test")
    for i, (name, folder) in enumerate(zip(r.class_names, r.folders, strict=True)):
        t.add_row(str(i), name, folder, str(r.counts["train"][i]), str(r.counts["test"][i]))
    console.print(t)
    if warn and (empty := r.without_training()):
        err.print(
            f"warning: no training image in class {empty}: `data add` refuses this folder",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    sizes = [f"{w}x{h}: {k}" for (w, h), k in r.sizes.most_common(SIZES_SHOWN)]
    rest = sum(r.sizes.values()) - sum(k for _, k in r.sizes.most_common(SIZES_SHOWN))
    if rest:
        sizes.append(f"{len(r.sizes) - SIZES_SHOWN} other sizes: {rest}")
    console.print(f"image sizes (W x H: files): {', '.join(sizes)}", highlight=False)
    modes = ", ".join(f"{m}: {k}" for m, k in r.modes.most_common())
    console.print(f"modes (Pillow: files): {modes}", highlight=False)
    if not r.rejected:
        console.print("rejected: none")
        return
    console.print(f"rejected ({len(r.rejected)}):")
    for path, why in r.rejected:
        shown = next((path.relative_to(b) for b in bases if path.is_relative_to(b)), path)
        console.print(
            f"  {printable(shown)}: {printable(why)}", markup=False, highlight=False, soft_wrap=True
        )


@data_app.command("check")
def check(
    folder: Annotated[Path, typer.Argument(help="one sub-folder of PNG/JPEG images per class")],
    size: SizeOpt = 32,
    channels: ChannelsOpt = 3,
    fit: FitOpt = "crop",
    test_dir: TestDirOpt = None,
    holdout: HoldoutOpt = 0.2,
    split_seed: SplitSeedOpt = 0,
    classes: ClassesOpt = None,
) -> None:
    """Say what a folder of images holds: classes, counts per split, image sizes, modes,
    and every file set aside with the reason. Writes nothing."""
    # Deferred (start-up time: loads torch, numpy, PIL).
    from engine.datasets.imagefolder import ImageFolder  # torch: not for `--help`

    opts = _options(size, channels, fit, test_dir, holdout, split_seed, classes)
    names = opts.pop("classes", None)
    names_from = opts.pop("classes_from", "the class names")
    ds = ImageFolder(
        folder, folder.name or "check", class_names=names, names_from=names_from, **opts
    )
    print_report(folder, ds.inspect(write_cache=False), (ds.root, ds.test_dir or ds.root))


@data_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="the dataset's name, e.g. road-signs")],
    folder: Annotated[Path, typer.Argument(help="the images (or a reader's files, --format)")],
    size: SizeOpt = 32,
    channels: ChannelsOpt = 3,
    fit: FitOpt = "crop",
    test_dir: TestDirOpt = None,
    holdout: HoldoutOpt = 0.2,
    split_seed: SplitSeedOpt = 0,
    classes: ClassesOpt = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="imagefolder, or a bundled reader's files: cifar10, "
            "svhn, mnist-idx (then only --classes applies)",
        ),
    ] = "imagefolder",
    domain: Annotated[
        str | None, typer.Option(help="what the images show, for labellers [NAME]")
    ] = None,
    replace: Annotated[bool, typer.Option(help="overwrite a dataset of this name")] = False,
    home: HomeOpt = None,
) -> None:
    """Name a folder of images (one sub-folder per class) as a dataset: decodes and caches
    every image, then writes $LATENTFUZZ_HOME/datasets/NAME.json."""
    # Deferred (start-up time: loads torch, numpy, PIL).
    from engine.datasets import DatasetError, printable, specs  # torch: not for `--help`

    resolve_home(home)
    opts = _options(size, channels, fit, test_dir, holdout, split_seed, classes)
    spec = specs.make_spec(name=name, format=fmt, root=str(folder), domain=domain, **opts)
    if spec.name in specs.user_dataset_names() and not replace:
        specs.save_spec(spec)  # refuses, naming the folder it points at
    ds = specs.open_spec(spec)
    if ds.num_classes < 2:
        raise DatasetError(
            f"{printable(folder)}: {ds.num_classes} class ({', '.join(ds.class_names)}); a "
            "classifier tells classes apart, so give at least two class folders"
        )
    if fmt == specs.IMAGEFOLDER:
        # Decoded once here: campaigns then read the cache.
        report = ds.inspect(write_cache=False)
        print_report(folder, report, (ds.root, ds.test_dir or ds.root), warn=False)
        if empty := report.without_training():
            # Added, trained on and searched before: a class a classifier never saw.
            raise DatasetError(
                f"{printable(folder)}: no training image in class {empty}; add images to it, or "
                "move its folder out (rejected files, listed above, count in the split)"
            )
        ds.save_cache()
    else:
        n = len(ds.load("test"))
        console.print(
            f"{printable(folder)}: {fmt} files, {n} test images", markup=False, highlight=False
        )
    path = specs.save_spec(spec, replace=replace)
    console.print(
        f"added {spec.name}: {' x '.join(map(str, ds.shape))}, {ds.num_classes} classes, "
        f"fingerprint {ds.fingerprint()} ({path})",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    try:
        check_shape(ds.shape, f"dataset {spec.name}")
    except ConfigError as e:
        # It said "next: latentfuzz train classifier", which then refused the size.
        err.print(
            f"warning: latentfuzz cannot train models at this size ({e}); models you "
            "import still work",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return
    console.print(f"next: latentfuzz train classifier --dataset {spec.name}", markup=False)


@data_app.command("remove")
def remove(name: str, home: HomeOpt = None) -> None:
    """Forget one of your datasets (its spec and decoded-image cache; images, models stay)."""
    # Deferred (start-up time: loads torch, numpy, PIL).
    from engine.datasets import specs  # torch: not for `--help`

    resolve_home(home)
    console.print(f"removed {specs.remove_spec(name)}", markup=False, highlight=False)


@data_app.command("list")
def list_datasets(home: HomeOpt = None) -> None:
    """Bundled and your datasets: shape, classes, fingerprint and how many models use each."""
    # Here, not at the top: they import torch, which `latentfuzz --help` never loads.
    from engine.datasets import DatasetError, dataset_names, get_dataset, printable
    from engine.datasets.specs import user_dataset_names
    from engine.models import zoo

    resolve_home(home)
    mine = set(user_dataset_names())
    models: dict[str, int] = {}
    for c in zoo.list_cards():
        models[c.get("dataset", "")] = models.get(c.get("dataset", ""), 0) + 1
    # One line per dataset rather than a table: class names and folders do not fit columns.
    for name in dataset_names():
        source = "yours" if name in mine else "bundled"
        try:
            ds = get_dataset(name)
            files = ds.source_files() if ds.reads_files else [None]
            names = ", ".join(ds.class_names[:4]) + (", …" if ds.num_classes > 4 else "")
            where = (
                "data in the package"
                if not ds.reads_files
                else f"data in {printable(ds.root)}"
                if files
                else f"no files found (give --data-dir, or `data add NAME DIR --format {name}`)"
            )
            line = (
                f"{name} ({source}): {'x'.join(map(str, ds.shape))}, {ds.num_classes} "
                f"class{'es' * (ds.num_classes != 1)} "
                f"({names}), fingerprint {ds.fingerprint() if files else '–'}, "
                f"models: {models.get(name, 0)}; {where}"
            )
        except DatasetError as e:
            line = f"{name} ({source}): unreadable: {e}"
        console.print(line, markup=False, highlight=False, soft_wrap=True)
