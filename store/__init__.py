"""latentfuzz store: DuckDB schema, batched writer and named queries; all of latentfuzz's SQL.

One module per domain: campaigns, metrics, studies (of campaigns), labels (validity
studies) and judging (a labeller's turn), differential, annotations, admin (delete,
rename), bundles, maintenance (doctor's checks), scale (the scale benchmark). Beneath
them: connection, host, files, locks, schema, writer, tables, recovery, liveness,
interrupts, rows, errors. The concurrency contract is in CONTRACT.md beside this file.

Names are imported on first use (PEP 562): `from store.errors import StoreError` must not
load DuckDB and pandas.
"""

from importlib import import_module

from store.errors import StoreBusy, StoreError

_LAZY = {
    "Store": ("store.connection", "Store"),
    "SCHEMA_VERSION": ("store.schema", "SCHEMA_VERSION"),
    "CampaignWriter": ("store.writer", "CampaignWriter"),
    "create_campaign": ("store.writer", "create_campaign"),
}

__all__ = ["StoreBusy", "StoreError", *_LAZY]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'store' has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = import_module(module) if attr is None else getattr(import_module(module), attr)
    globals()[name] = value  # once: later lookups skip this function
    return value
