"""latentfuzz store: DuckDB schema, batched writer and named read queries.

The concurrency contract is in CONTRACT.md beside this file.
"""

from store import queries
from store.connection import Store, StoreBusy, StoreError
from store.schema import SCHEMA_VERSION
from store.writer import CampaignWriter, create_campaign

__all__ = [
    "CampaignWriter",
    "SCHEMA_VERSION",
    "Store",
    "StoreBusy",
    "StoreError",
    "create_campaign",
    "queries",
]
