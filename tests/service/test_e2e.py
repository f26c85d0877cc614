"""End to end: the daemon with a real Prometheus as its source and the API double as its cluster.

One replica goes through leader election, reconcile ticks on the fallback model, a retrain that
publishes a model the next tick hot-reloads, and a hand-off after its forecasts miss; at each
step the endpoint's JSON and /metrics say so. ``forecaster doctor`` reports the guardrails.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from forecaster.actuators.kube import Kube, api_client
from forecaster.app import training
from forecaster.app.build import build_cluster_service
from forecaster.cli import main
from forecaster.core.series import to_epoch_seconds
from forecaster.durations import DAY
from forecaster.reconcile.state import PendingForecast
from forecaster.service.clock import FakeClock
from forecaster.service.http import create_app
from forecaster.settings import Settings
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.conftest import HELIOS, load_sample

pytestmark = pytest.mark.prometheus
POOL = "earth"


def settings(tmp_path: Path, prometheus_url: str) -> Settings:
    return Settings.model_validate(
        {
            "source": {"kind": "prometheus", "prometheus": {"url": prometheus_url}},
            "models_dir": str(tmp_path / "models"),
            "forecast": {
                "models": ["persistence", "quantreg-raw"],
                "history_days": 14,
                "min_history_days": 10,
                "backtest": {"test_days": 1, "train_days": 9},
            },
            "pools": [
                {"name": POOL, "max_prewarm_gpus": 32, "query": 'gpus_requested{pool="earth"}'}
            ],
        }
    )


def metric(text: str, name: str) -> float:
    line = next(line for line in text.splitlines() if line.startswith(name))
    return float(line.rsplit(" ", 1)[1])


def test_daemon_end_to_end(
    tmp_path: Path, prometheus_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    helios, _ = load_sample(HELIOS)
    now = helios.start + 15 * DAY  # inside the 16 days backfilled into Prometheus
    clock = FakeClock(datetime.fromtimestamp(now, tz=UTC))
    config = settings(tmp_path, prometheus_url)
    with KubeApiDouble() as api:
        api.clock = float(now)
        busy_cluster = ClusterSim(api)
        busy_cluster.add_nodepool(POOL, limit_gpus=2000)
        for _ in range(80):
            busy_cluster.add_node(POOL)
        for i in range(80):
            busy_cluster.submit(f"job-{i}", POOL, 8)
        busy_cluster.step()
        original = api.objects("nodepools")[0]
        kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
        service = build_cluster_service(config, kube, identity="replica-a", clock=clock)
        client = TestClient(create_app(service.daemon))

        # leader election, then ticks on the fallback baseline
        service.renew()
        assert client.get("/api/v1/status").json()["leader"] is True
        service.reconcile()
        forecast = client.get("/api/v1/forecast", params={"pool": POOL}).json()
        assert (forecast["model"], forecast["model_version"]) == ("persistence", "fallback")
        assert len(forecast["history"]["gpus"]) == 24 * 12 + 1  # 24 h from Prometheus, 5-min points
        plan = client.get("/api/v1/plan").json()["pools"][0]
        assert (
            plan["target_gpus"] > 0
            and len(api.objects("jobs", "forecaster-placeholders")) == plan["placeholders"]
        )
        text = client.get("/metrics").text
        assert metric(text, 'forecaster_prewarm_target_gpus{pool="earth"}') == plan["target_gpus"]
        assert metric(text, "forecaster_leader") == 1

        # retrain (the CronJob's work) -> the next tick hot-reloads the published model
        results = training.train(config, pools=[POOL], clock=clock)
        assert results[0].status == "trained", results[0].message
        clock.set(datetime.fromtimestamp(now + 60, tz=UTC))
        service.renew()
        service.reconcile()
        forecast = client.get("/api/v1/forecast", params={"pool": POOL}).json()
        assert forecast["model_version"] == results[0].version

        # forecasts that missed -> the error budget burns -> hand-off withdraws everything
        state = service.daemon.reconciler.state.pool(POOL)
        t = to_epoch_seconds(clock.now())
        state.pending = [
            PendingForecast(t - 3600 + 120 * i, t - 3000 + 120 * i, 0.0) for i in range(25)
        ]
        clock.set(datetime.fromtimestamp(now + 120, tz=UTC))
        service.renew()
        service.reconcile()
        status = client.get("/api/v1/status").json()["pools"][POOL]
        assert status["mode"] == "handed-off" and "error budget burning" in status["reason"]
        assert api.objects("jobs", "forecaster-placeholders") == []
        assert api.objects("nodepools")[0]["spec"] == original["spec"]
        text = client.get("/metrics").text
        assert metric(text, 'forecaster_handoff_active{pool="earth"}') == 1
        assert metric(text, 'forecaster_prewarm_target_gpus{pool="earth"}') == 0
        assert api.invalid == []

        config_path = tmp_path / "c.yaml"
        config_path.write_text(config.model_dump_json())
        assert main(["doctor", "--config", str(config_path), "--kube-host", api.url]) == 0
        out = capsys.readouterr().out
        assert "WARN unprotected-gpu-workloads [earth]" in out
        assert "WARN short-history [earth]: 0.0 days" in out  # the backfill is years old
