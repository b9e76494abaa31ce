"""The store's exceptions, apart from the store itself: the CLI's error handler catches them
without importing DuckDB or pandas (``latentfuzz --help`` stays fast)."""


class StoreBusy(TimeoutError):
    """Another process held the database for longer than the timeout."""


class StoreError(RuntimeError):
    """The store file is not one this version can use (or cannot be written)."""
