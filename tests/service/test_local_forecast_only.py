"""The safe first step on a real cluster: ``forecaster run --prometheus-url URL --forecast-only``
from a laptop, against a real Prometheus (three days of demand ending now) and the API double
standing in for the kubeconfig's cluster.

It serves the page and the forecast on 127.0.0.1 within seconds, plans what it would prewarm,
and sends not one write to the cluster - no placeholder, no state, not even a Lease.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from forecaster.cli import main
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.prometheus_server import Series, free_port, running_prometheus

POOL = "gpu-a"
NOW = int(time.time()) // 60 * 60


@pytest.fixture(scope="module")
def recent_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    minutes = range(3 * 1440, -1, -1)
    samples = [(NOW - 60 * m, 16.0 + 8.0 * ((m // 90) % 2)) for m in minutes]
    series = [Series("gpus_requested", {"pool": POOL}, samples)]
    with running_prometheus(tmp_path_factory.mktemp("recent"), series) as url:
        yield url


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        body = response.read().decode()
    return (
        yaml.safe_load(body)
        if response.headers["content-type"].startswith("application/json")
        else body
    )


def test_a_local_forecast_only_run_serves_forecasts_and_writes_nothing(
    tmp_path: Path, recent_prometheus: str
) -> None:
    config = tmp_path / "forecaster.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "source": {"kind": "csv"},
                "models_dir": str(tmp_path / "models"),
                "pools": [
                    {"name": POOL, "query": 'gpus_requested{pool="gpu-a"}', "csv": "unused.csv"}
                ],
            }
        )
    )
    port = free_port()
    with KubeApiDouble(capacity_buffers=True) as api:
        ClusterSim(api).busy_pool(POOL)
        before = len(api.writes())
        args = [
            "run",
            "--config",
            str(config),
            "--prometheus-url",
            recent_prometheus,
            "--forecast-only",
            "--kube-host",
            api.url,
            "--port",
            str(port),
            "--duration",
            "8s",
        ]
        codes: list[int] = []
        runner = threading.Thread(target=lambda: codes.append(main(args)))
        runner.start()
        base = f"http://127.0.0.1:{port}"
        status: dict[str, Any] = {}
        deadline = time.monotonic() + 7
        while time.monotonic() < deadline and not status.get("ready"):
            time.sleep(0.3)
            try:
                status = _get(f"{base}/api/v1/status")
            except OSError:
                continue
        forecast = _get(f"{base}/api/v1/forecast?pool={POOL}")
        plan = _get(f"{base}/api/v1/plan")
        page = _get(f"{base}/")
        runner.join(timeout=30)
        writes = [w.path for w in api.writes()[before:]]
    assert codes == [0]
    assert status["ready"] and status["pools"][POOL]["mode"] == "forecast-only"
    assert forecast["forecast"]["upper"] and forecast["history"]["gpus"]  # P95 and its history
    pool_plan = plan["pools"][0]
    assert pool_plan["mode"] == "forecast-only" and not pool_plan["acts"]
    assert any("forecast-only: would prewarm" in r for r in pool_plan["reasons"])
    assert "<html" in page.lower()
    assert writes == []  # not a placeholder, not the state, not a Lease
