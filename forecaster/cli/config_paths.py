"""Where the commands look for their config when ``--config`` is not given."""

import os
from pathlib import Path
from typing import Any

import yaml

DEFAULT_CONFIG = Path("config/forecaster.yaml")
"""The working directory's config, first."""
BUNDLED_CONFIG = Path(__file__).resolve().parents[2] / "config" / "forecaster.yaml"
"""Else the one shipped with the package (the embedded default)."""


def namespace_of(config: Path | None) -> str:
    """forecaster's namespace for commands that must work when the config does not validate
    (``cleanup``): ``planning.placeholders.namespace`` of ``config`` read as plain YAML, else
    ``$POD_NAMESPACE``, else ``forecaster``."""
    found: Any = None
    if config is not None:
        try:
            document = yaml.safe_load(config.read_text())
            found = document["planning"]["placeholders"]["namespace"]
        except (OSError, yaml.YAMLError, KeyError, TypeError):
            found = None
    if isinstance(found, str) and found:
        return found
    return os.environ.get("POD_NAMESPACE") or "forecaster"
