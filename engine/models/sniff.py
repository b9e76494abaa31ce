"""What a classifier file holds, told from its bytes before torch or onnx is imported.

An 18-byte text file uploaded as a classifier took 8 s to refuse (torch imported, a child
process started, the file copied) and was refused in PyTorch's words, twelve lines about
an "internal miniz error". A TorchScript file is a zip archive with TorchScript code in it
and an ONNX file is a protobuf ModelProto: both can be recognised from the bytes alone, so
an obviously wrong file is refused at once, in one line saying what it is instead.

Stdlib only: the CLI calls this before it imports torch.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import BinaryIO

from engine.core.errors import ModelError

EXPECTED = "expected a file written by torch.jit.save or torch.onnx.export"
SCRIPT_FIX = "export it with torch.jit.script(model) or torch.jit.trace(model, example) then "

#: Bytes read to tell text from binary.
HEAD = 4096
#: Top-level fields walked at most: an exported model has a few dozen (opset imports,
#: metadata, functions); text that happened to parse would go on for ever.
MAX_FIELDS = 100_000
#: ModelProto's fields (onnx.proto) and their wire types: 0 varint, 2 length-delimited.
#: Others (a newer ONNX's) are allowed with any valid wire type.
ONNX_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2}
GRAPH = 7


def _varint(f: BinaryIO) -> int | None:
    """A protobuf varint read from `f`, or None at the end or after 10 bytes."""
    value = 0
    for shift in range(0, 70, 7):
        b = f.read(1)
        if not b:
            return None
        value |= (b[0] & 0x7F) << shift
        if not b[0] & 0x80:
            return value
    return None


def _is_onnx(f: BinaryIO, size: int) -> bool:
    """Whether the bytes are a ModelProto with a graph: every top-level field well formed,
    the last ending exactly at the end. Lengths are skipped, never read (the graph holds
    the weights: hundreds of MB)."""
    f.seek(0)
    seen_graph = False
    for _ in range(MAX_FIELDS):
        if f.tell() == size:
            return seen_graph
        tag = _varint(f)
        if tag is None:
            return False
        field, wire = tag >> 3, tag & 7
        if field == 0 or ONNX_FIELDS.get(field, wire) != wire:
            return False
        if wire == 0:
            if _varint(f) is None:
                return False
        elif wire in (1, 5):
            f.seek(8 if wire == 1 else 4, io.SEEK_CUR)
        elif wire == 2:
            length = _varint(f)
            if length is None or f.tell() + length > size:
                return False
            f.seek(length, io.SEEK_CUR)
        else:  # 3 and 4 (groups) are not in ONNX; 6 and 7 are not wire types
            return False
        seen_graph |= field == GRAPH
        if f.tell() > size:
            return False
    return False


def _zip_kind(f: BinaryIO) -> tuple[str | None, str]:
    """A zip archive: TorchScript (its code and constants), a torch.save file (a pickle,
    no code), or something else."""
    f.seek(0)
    try:
        names = zipfile.ZipFile(f).namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return None, "a damaged or cut zip archive: copy or export it again"
    if any(n.endswith("/constants.pkl") for n in names) and any("/code/" in n for n in names):
        return "torchscript", "a TorchScript archive"
    if any(n.endswith("/data.pkl") for n in names):
        return None, (
            "a torch.save checkpoint (weights or a pickled module), not TorchScript: "
            f"{SCRIPT_FIX}torch.jit.save"
        )
    return None, "a zip archive without TorchScript code in it"


def _text(head: bytes, size: int) -> str | None:
    """Words for a text file (an HTML page, a Git LFS pointer, any text), or None."""
    if b"\0" in head:
        return None
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 4:  # not just a character cut at the end of the head
            return None
        text = head[: e.start].decode("utf-8")
    start = text.lstrip().lower()
    if start.startswith(("<!doctype html", "<html")):
        return f"an HTML page of {size:,} bytes: a download that saved the web page?"
    if start.startswith("version https://git-lfs"):
        return "a Git LFS pointer, not the model itself: run git lfs pull"
    return f"{size:,} bytes of text"


def sniff(f: BinaryIO, size: int) -> tuple[str | None, str]:
    """(format, what): the classifier format the bytes hold ('torchscript' or 'onnx'), or
    None with what they are instead, in words for a refusal ("18 bytes of text")."""
    f.seek(0)
    head = f.read(HEAD)
    if size == 0:
        return None, "empty, 0 bytes: copy or export it again"
    if head.startswith(b"PK\x03\x04"):
        return _zip_kind(f)
    if _is_onnx(f, size):
        return "onnx", "an ONNX model"
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return None, (
            f"a pickle (an old torch.save file), not a zip archive: {SCRIPT_FIX}torch.jit.save"
        )
    if (words := _text(head, size)) is not None:
        return None, words
    return None, f"{size:,} bytes, neither a zip archive (TorchScript) nor an ONNX protobuf"


def classifier_format(data: bytes | Path, shown: str) -> str:
    """The format of a classifier file (its bytes, or its path), refusing in one line one
    that is neither TorchScript nor ONNX; `shown` names it as the user knows it."""
    size = data.stat().st_size if isinstance(data, Path) else len(data)
    if size == 0:  # as the loaders say it (engine/classifiers/base.py refuse_empty)
        kind = "ONNX" if Path(shown).suffix.lower() == ".onnx" else "TorchScript"
        raise ModelError(
            f"{shown} is empty (0 bytes); expected a {kind} file: copy or export it again"
        )
    if isinstance(data, Path):
        with data.open("rb") as f:
            fmt, what = sniff(f, size)
    else:
        fmt, what = sniff(io.BytesIO(data), size)
    if fmt is None:
        raise ModelError(f"{shown} is not a TorchScript or ONNX model (it is {what}); {EXPECTED}")
    return fmt


def refuse_not_torchscript(path: Path, shown: str) -> None:
    """Refuse, from its bytes, a decoder file that is not a TorchScript archive (the only
    format a decoder is imported in), in one line naming it as `shown`."""
    with path.open("rb") as f:
        fmt, what = sniff(f, path.stat().st_size)
    if fmt != "torchscript":
        raise ModelError(
            f"{shown} is not a TorchScript decoder (it is {what}); expected a file written by "
            f"torch.jit.save: {SCRIPT_FIX}torch.jit.save"
        )
