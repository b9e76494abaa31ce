"""Errors that reach users. Each message says what was received, what was expected and the fix."""


class LatentfuzzError(Exception):
    """Base of all user-facing errors."""


class ConfigError(LatentfuzzError, ValueError):
    """A campaign or study configuration is invalid."""


class ModelError(LatentfuzzError, ValueError):
    """A model file or a model's output is not what the engine needs."""
