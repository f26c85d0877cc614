"""Where the commands look for their config when ``--config`` is not given."""

from pathlib import Path

DEFAULT_CONFIG = Path("config/forecaster.yaml")
"""The working directory's config, first."""
BUNDLED_CONFIG = Path(__file__).resolve().parents[2] / "config" / "forecaster.yaml"
"""Else the one shipped with the package (the embedded default)."""
