"""Fault rows about data, through the daemon (reconcile loop + endpoint + metrics).

Cases: the source fails -> no new prewarm, the existing one is held, status and /metrics say
why, and when data comes back prewarm resumes by itself; Prometheus's clock runs ahead of the
daemon's (samples "from the future") -> the tick works and never acts on samples after now; a
single absurd sample (NaN, negative, a 10,000x spike) -> no crash, no prewarm beyond the caps,
and the NaN/negative ones are reported as data problems.
"""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from forecaster.service import app
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.settings import Settings
from tests.service.fakes import POOL, T0, LiveSource, calm_history


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
    reconciler = app.build_reconciler(config, source=source, what_if=True)
    return Daemon(reconciler=reconciler, slo=app.slo_policy(config), pools=(POOL,))


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
    assert recovered is not None and recovered.errors == {}
    assert recovered.plan.pool(POOL).target_gpus >= 8
    assert not any("stale" in r for r in recovered.plan.pool(POOL).reasons)


def test_prometheus_clock_ahead_of_the_daemon(tmp_path: Path) -> None:
    history = calm_history()
    skewed = LiveSource(T0 - 2 * 86400 + 120, history)  # samples stamped 2 minutes ahead
    record = daemon(tmp_path, skewed).reconcile(T0)
    assert record is not None and record.errors == {}
    view = record.pools[POOL]
    assert view.demand is not None and view.demand.data_end <= T0
    assert view.history is not None and view.history.end <= T0


def test_absurd_samples_never_prewarm_beyond_the_caps(tmp_path: Path) -> None:
    for bad in (float("nan"), -50.0, 1e6):
        values = calm_history()
        values[-1] = bad
        record = daemon(tmp_path, LiveSource(T0 - 2 * 86400, values), cap=16).reconcile(T0)
        assert record is not None
        assert record.plan.total_target_gpus <= 16
        if bad != 1e6:
            assert any("treated as gaps" in line for line in record.pools[POOL].quality)
