"""Where the commands look for their config when ``--config`` is not given."""

import os
from pathlib import Path
from typing import Any

import yaml

DEFAULT_CONFIG = Path("config/forecaster.yaml")
"""The working directory's config, first."""
BUNDLED_CONFIG = Path(__file__).resolve().parents[2] / "config" / "forecaster.yaml"
"""Else the one shipped with the package (the embedded default)."""
PLACEHOLDERS_SUFFIX = "-placeholders"
"""The placeholders' namespace when nothing names it: forecaster's own plus this suffix (the
settings' and both renders' default)."""


def namespaces_of(config: Path | None) -> tuple[str, str]:
    """forecaster's own namespace and the placeholders' one, for commands that must work when
    the config does not validate (``cleanup``): ``namespace`` and
    ``planning.placeholders.namespace`` of ``config`` read as plain YAML; else
    ``$POD_NAMESPACE`` (else ``forecaster``) and that name plus ``-placeholders``."""
    document: Any = None
    if config is not None:
        try:
            document = yaml.safe_load(config.read_text())
        except (OSError, yaml.YAMLError):
            document = None
    own = _text(document, "namespace") or os.environ.get("POD_NAMESPACE") or "forecaster"
    placeholders = _text(document, "planning", "placeholders", "namespace")
    return own, placeholders or own + PLACEHOLDERS_SUFFIX


def _text(document: Any, *keys: str) -> str | None:
    for key in keys:
        document = document.get(key) if isinstance(document, dict) else None
    return document if isinstance(document, str) and document else None
