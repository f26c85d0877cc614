"""Fixtures of the service tests: a ticking what-if daemon."""

from __future__ import annotations

from pathlib import Path

import pytest

from forecaster.app import build
from forecaster.service.daemon import Daemon
from forecaster.settings import Settings
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history


@pytest.fixture
def daemon(tmp_path: Path) -> Daemon:
    return what_if_daemon(tmp_path)


def what_if_daemon(tmp_path: Path) -> Daemon:
    """One pool planned from a calm two-day history, no cluster (state in memory)."""
    settings = Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(tmp_path / "models"),
            "pools": [{"name": POOL, "max_prewarm_gpus": 32}],
        }
    )
    source = LiveSource(T0 - 2 * 86400, calm_history())
    reconciler = build.build_reconciler(settings, source=source, what_if=True)
    return Daemon(reconciler=reconciler, pools=(POOL,))
