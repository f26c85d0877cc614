"""Fault rows about data, through the daemon (reconcile loop + endpoint + metrics).

Cases: the source fails -> no new prewarm, the existing one is held, status and /metrics say
why, and when data comes back prewarm resumes by itself. Through the real test Prometheus (its
TSDB, its query engine and our client's parser): Prometheus holds samples stamped after the
daemon's clock -> the tick works and never acts on samples after now; a last sample that is
NaN, negative or a 10^6 spike -> no crash, no prewarm beyond the caps, and the NaN/negative
ones are reported as data problems.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from forecaster.app import build
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.settings import Settings
from forecaster.sources.prometheus import PrometheusSource
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history
from tests.conftest import BACKFILL_DAYS, FAULTY, HELIOS, load_sample


def daemon(tmp_path: Path, source: LiveSource, *, cap: int = 32) -> Daemon:
    config = Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(tmp_path / "models"),
            "planning": {
                "budgets": {"max_total_prewarm_gpus": cap},
                "stale_after_seconds": 300,
                "hold_seconds": 900,
            },
            "pools": [{"name": POOL, "max_prewarm_gpus": 64}],
        }
    )
    reconciler = build.build_reconciler(config, source=source, what_if=True)
    return Daemon(reconciler=reconciler, pools=(POOL,))


def test_source_failure_is_reported_held_and_recovers(tmp_path: Path) -> None:
    source = LiveSource(T0 - 2 * 86400, calm_history())
    d = daemon(tmp_path, source)
    client = TestClient(create_app(d))
    first = d.reconcile(T0)
    assert first is not None and first.plan.pool(POOL).target_gpus >= 8
    source.fail = "Prometheus http://prom:9090 did not answer within 10s"
    d.reconcile(T0 + 600)
    status = client.get("/api/v1/status").json()
    assert status["pools"][POOL]["errors"] == [
        "data: Prometheus http://prom:9090 did not answer within 10s"
    ]
    plan = client.get("/api/v1/plan").json()["pools"][0]
    assert any("stale" in r for r in plan["reasons"])
    assert 'forecaster_reconcile_errors_total{kind="data"} 1.0' in client.get("/metrics").text
    source.fail = None
    source.append(*calm_history(days=0.01, level=source.values[-1])[:11])
    recovered = d.reconcile(T0 + 660)
    assert recovered is not None and recovered.errors == ()
    assert recovered.plan.pool(POOL).target_gpus >= 8
    assert not any("stale" in r for r in recovered.plan.pool(POOL).reasons)


def prometheus_daemon(tmp_path: Path, url: str, pool: str, *, cap: int = 32) -> Daemon:
    """A daemon whose demand comes from the real test Prometheus (``gpus_requested{pool}``)."""
    config = Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(tmp_path / "models"),
            "planning": {"budgets": {"max_total_prewarm_gpus": cap}},
            "pools": [{"name": pool, "max_prewarm_gpus": 64}],
        }
    )
    source = PrometheusSource(
        url=url, queries={pool: f'gpus_requested{{pool="{pool}"}}'}, outage_min_seconds=0
    )
    reconciler = build.build_reconciler(config, source=source, what_if=True)
    return Daemon(reconciler=reconciler, pools=(pool,))


def last_sample() -> int:
    """Timestamp of the newest sample backfilled into the test Prometheus (conftest)."""
    helios = load_sample(HELIOS)[0]
    backfilled = helios.window(helios.start, helios.start + BACKFILL_DAYS * 86400)
    return int(backfilled.timestamps[backfilled.usable][-1])


@pytest.mark.prometheus
@pytest.mark.parametrize("ahead_seconds", [120, 1800])
def test_prometheus_clock_ahead_of_the_daemon(
    tmp_path: Path, prometheus_url: str, ahead_seconds: int
) -> None:
    """Prometheus holds samples stamped after the daemon's "now": none may be acted on."""
    now = last_sample() - ahead_seconds
    record = prometheus_daemon(tmp_path, prometheus_url, "earth").reconcile(now)
    assert record is not None and record.errors == ()
    view = record.pools["earth"]
    assert view.demand is not None and now - 300 <= view.demand.data_end <= now
    assert view.history is not None and view.history.end <= now


@pytest.mark.prometheus
@pytest.mark.parametrize("kind", list(FAULTY))
def test_absurd_samples_never_prewarm_beyond_the_caps(
    tmp_path: Path, prometheus_url: str, kind: str
) -> None:
    """A NaN, a negative or a 10^6 sample, parsed by the real Prometheus and our client."""
    record = prometheus_daemon(tmp_path, prometheus_url, kind, cap=16).reconcile(last_sample())
    assert record is not None
    assert record.plan.total_target_gpus <= 16
    if kind != "spike":
        assert any("treated as gaps" in line for line in record.pools[kind].quality)
