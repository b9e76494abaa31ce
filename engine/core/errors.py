"""Errors that reach users. Each message says what was received, what was expected and the fix."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


class LatentfuzzError(Exception):
    """Base of all user-facing errors."""


class ConfigError(LatentfuzzError, ValueError):
    """A campaign or study configuration is invalid."""


class ModelError(LatentfuzzError, ValueError):
    """A model file or a model's output is not what the engine needs."""


#: Longest text of someone else's (a library's message, a parser's problem) put in one of
#: ours: a 100 MB value echoed in an exception is not echoed whole.
CLIP_LIMIT = 200


def clip(text: str, limit: int = CLIP_LIMIT) -> str:
    """`text` on one line, cut at a word with an ellipsis where longer than `limit` (a cut
    mid-word, "...your checkpoint file is)", read as a broken message)."""
    text = " ".join(text.split()) if "\n" in text or "\r" in text else text
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + "…"


def cause(e: BaseException, limit: int = CLIP_LIMIT) -> str:
    """`Type: first line` of a library's exception, for inside one of our messages, clipped."""
    lines = str(e).strip().splitlines()
    text = lines[0] if lines else ""
    if "TorchScript interpreter" in text and lines[-1].strip():
        # Its first line says only that an operation failed; the reason is the last
        # ("RuntimeError: ... expected input[3, 3, 32, 32] to have 1 channels ...").
        text = lines[-1].strip().split(": ", 1)[-1]
    text = clip(text, limit)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def yaml_problem(e: BaseException) -> str:
    """A YAML parse error in one line: 'not valid YAML at line 2, column 1: expected ...;
    check ...' (PyYAML's own text spans six lines, with a caret drawing)."""
    mark = getattr(e, "problem_mark", None)
    at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    return (
        f"not valid YAML{at}: {clip(str(getattr(e, 'problem', None) or e))}; check the brackets, "
        "quotes and indentation there"
    )


def refuse_not_file(path: Path, what: str, expected: str) -> None:
    """A model path that is a folder or nothing, named as such: a folder was reported as
    a file that "does not exist"."""
    if path.is_dir():
        raise ModelError(f"{what} {path} is a folder; give the path of {expected}")
    if not path.is_file():
        raise ModelError(f"{what} {path} does not exist; give the path of {expected}")
