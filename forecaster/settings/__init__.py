"""Configuration: one YAML file validated by pydantic, with ``FORECASTER_*`` env overrides.

``schema`` is every setting (types, bounds, defaults, descriptions); ``loading`` reads a file
into it. Only ``app`` and ``cli`` read settings; they hand plain values to everything else.
"""

from forecaster.settings.loading import ENV_PREFIX, describe_errors, load_settings
from forecaster.settings.schema import (
    BudgetSettings,
    KueuePoolSettings,
    PoolSettings,
    Settings,
)

__all__ = [
    "ENV_PREFIX",
    "BudgetSettings",
    "KueuePoolSettings",
    "PoolSettings",
    "Settings",
    "describe_errors",
    "load_settings",
]
