"""Fixtures of the service tests: the API double with a small GPU pool, and a ticking daemon."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from forecaster.service import app
from forecaster.service.daemon import Daemon
from forecaster.settings import Settings
from tests.kubeapi.cluster import ClusterSim
from tests.kubeapi.server import KubeApiDouble
from tests.service.fakes import POOL, T0, LiveSource, calm_history


@pytest.fixture
def api() -> Iterator[KubeApiDouble]:
    with KubeApiDouble(capacity_buffers=True) as server:
        server.clock = float(T0)
        yield server
    assert server.invalid == []


@pytest.fixture
def sim(api: KubeApiDouble) -> ClusterSim:
    sim = ClusterSim(api)
    sim.busy_pool(POOL)
    return sim


@pytest.fixture
def daemon(tmp_path: Path) -> Daemon:
    settings = Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(tmp_path / "models"),
            "pools": [{"name": POOL, "max_prewarm_gpus": 32}],
        }
    )
    source = LiveSource(T0 - 2 * 86400, calm_history())
    reconciler = app.build_reconciler(settings, source=source, what_if=True)
    return Daemon(reconciler=reconciler, slo=app.slo_policy(settings), pools=(POOL,))
