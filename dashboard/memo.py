"""Results kept per content of their inputs, for the pages' pure steps whose inputs
rarely change between reruns (a finished campaign's rows): charts' specs (dashboard/vega.py),
convergence bands, significance marks, zips. A rerun on the same rows computes nothing;
rows that moved give a new key, so nothing stale is ever shown."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import pandas as pd

#: Results kept (the oldest go first).
KEPT = 128
_KEPT: OrderedDict[Hashable, Any] = OrderedDict()
_LOCK = threading.Lock()
#: Results computed, not found (tests count them: a rerun on the same rows adds none).
computed = 0


def content_key(value: Any) -> Hashable:
    """A key that changes when what the chart draws changes: a frame by its columns, types
    and every value (its index too: order is drawn), an array by its bytes, containers by
    their items; anything else by its repr."""
    if isinstance(value, pd.DataFrame):
        try:
            values = pd.util.hash_pandas_object(value, index=True).to_numpy().tobytes()
        except (TypeError, ValueError):  # cells of lists or dicts: their full repr
            values = repr(value.to_dict("split")).encode()
        return (
            "frame",
            tuple(map(str, value.columns)),
            tuple(map(str, value.dtypes)),
            values,
            repr(value.attrs),  # (Compare's table carries its grid axis there)
        )
    if isinstance(value, pd.Series):
        return content_key(value.to_frame())
    if isinstance(value, np.ndarray):  # (its repr elides the middle of a long one)
        return ("array", value.shape, str(value.dtype), value.tobytes())
    if isinstance(value, dict):
        return ("dict", tuple((k, content_key(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        flat = tuple(value)
        try:  # numbers and words (a metric's gaps): the tuple is its own key
            hash(flat)
        except TypeError:
            flat = tuple(content_key(v) for v in value)
        return (type(value).__name__, flat)
    return repr(value)


def kept(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)`, computed once per content of the arguments. `fn` must be
    pure and its result not changed by the caller (it is shared)."""
    global computed
    key = (fn.__module__, fn.__qualname__, content_key(args), content_key(kwargs))
    with _LOCK:
        if key in _KEPT:
            _KEPT.move_to_end(key)
            return _KEPT[key]
    value = fn(*args, **kwargs)
    with _LOCK:
        computed += 1
        _KEPT[key] = value
        while len(_KEPT) > KEPT:
            _KEPT.popitem(last=False)
    return value
