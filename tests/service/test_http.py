"""The inspection endpoint over a daemon that has ticked (FastAPI TestClient, in-process).

Cases: healthz; readyz 503 before the first tick and 200 after (spend before it is zero);
forecast JSON (history, P50/P95 per horizon, prewarm trail, model); plan JSON with reasons;
status JSON with mode and budgets; /metrics in Prometheus text with our families; OpenAPI lists
every path; the page is self-contained (no external scripts); bad and unknown pools get 4xx with
a message; the operating point chosen at the last retrain is shown with its alternatives, its
cap and quantile.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from forecaster.app import build
from forecaster.core.error_budget import ErrorBudgetState
from forecaster.core.operating_point import Budget, Candidate, operating_point
from forecaster.core.planner import Mode
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.testing.fakes import T0, LiveSource, calm_history, settings
from tests.factories import publish_with_point

POOL = "gpu-a"


def test_probes(daemon: Daemon) -> None:
    client = TestClient(create_app(daemon))
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").status_code == 503
    # Swagger UI / ReDoc would load code from a CDN: not served (the OpenAPI document is)
    assert client.get("/docs").status_code == 404 and client.get("/redoc").status_code == 404
    assert client.get("/openapi.json").status_code == 200
    assert client.get("/api/v1/plan").status_code == 503
    before = daemon.spend(POOL)  # before the first tick: nothing spent, no error
    assert (before.node_gpu_hours, before.prewarm_gpu_hours, before.prewarm_cost) == (0, 0, 0)
    assert daemon.spend("not-a-pool").price_per_gpu_hour == 0.0  # unknown: no price, not -1
    daemon.reconcile(T0)
    assert client.get("/readyz").status_code == 200


def test_forecast_plan_status_and_metrics(daemon: Daemon) -> None:
    daemon.reconcile(T0 - 60)
    daemon.reconcile(T0)
    client = TestClient(create_app(daemon))
    forecast = client.get("/api/v1/forecast", params={"pool": POOL}).json()
    assert forecast["model"] == "persistence" and forecast["model_version"] == "fallback"
    assert len(forecast["history"]["timestamps"]) == len(forecast["history"]["gpus"]) > 200
    assert forecast["forecast"]["horizons_seconds"] == [300, 900, 1800]
    assert all(
        p95 >= p50
        for p50, p95 in zip(forecast["forecast"]["p50"], forecast["forecast"]["upper"], strict=True)
    )
    assert len(forecast["prewarm"]["gpus"]) == 2
    plan = client.get("/api/v1/plan").json()
    (pool,) = plan["pools"]
    assert pool["pool"] == POOL and pool["target_gpus"] >= 8 and pool["reasons"]
    status = client.get("/api/v1/status").json()
    assert status["pools"][POOL]["mode"] == "predictive" and status["ready"] and status["leader"]
    metrics = client.get("/metrics")
    assert metrics.headers["content-type"].startswith("text/plain")
    text = metrics.text
    assert f'forecaster_prewarm_target_gpus{{pool="{POOL}"}} {float(pool["target_gpus"])}' in text
    assert 'forecaster_forecast_gpus{horizon_seconds="900",pool="gpu-a",quantile="0.95"}' in text
    assert "forecaster_reconcile_total 2.0" in text
    assert "forecaster_reconcile_duration_seconds_count 2.0" in text


def test_openapi_and_page(daemon: Daemon) -> None:
    client = TestClient(create_app(daemon))
    paths = set(client.get("/openapi.json").json()["paths"])
    assert {
        "/api/v1/forecast",
        "/api/v1/plan",
        "/api/v1/status",
        "/metrics",
        "/healthz",
        "/readyz",
    } <= paths
    page = client.get("/").text
    assert "<canvas" in page and "gpu-a" in page
    assert "<script src" not in page and "https://" not in page


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({"pool": "nope"}, 404, "unknown pool 'nope'"),
        ({"pool": "../../etc"}, 422, "String should match pattern"),
        ({"pool": "x" * 300}, 422, "at most 63 characters"),
        ({}, 422, "Field required"),
    ],
)
def test_bad_requests_get_4xx_with_a_message(
    daemon: Daemon, params: dict[str, str], status: int, message: str
) -> None:
    daemon.reconcile(T0)
    response = TestClient(create_app(daemon)).get("/api/v1/forecast", params=params)
    assert response.status_code == status
    assert message in response.text


def test_history_shows_past_forecasts_budgets_episodes_and_spend(daemon: Daemon) -> None:
    for minute in range(40, -1, -1):
        daemon.reconcile(T0 - 60 * minute)
    state = daemon.reconciler.state.pool(POOL)
    state.budget = ErrorBudgetState(mode=Mode.HANDED_OFF, since=T0 + 60, reason="budget burning")
    daemon.reconcile(T0 + 60)
    client = TestClient(create_app(daemon))
    history = client.get("/api/v1/history", params={"pool": POOL}).json()
    n = len(history["timestamps"])
    assert n == 42
    for key in ("mode", "prewarm_gpus", "held_gpus", "error_budget_remaining"):
        assert len(history[key]) == n, key
    past = history["forecasts"]
    assert past["target_times"] and len(past["upper"]) == len(past["actual"]) == len(past["missed"])
    assert past["quantile"] == 0.95
    (episode,) = history["episodes"]
    assert episode["end"] is None and history["mode"][-1] in ("handed-off", "recovering")
    status = client.get("/api/v1/status").json()
    finops = status["pools"][POOL]["finops"]
    assert finops["gpu_hours_24h"] > 0 and finops["cost_per_used_gpu_hour"] > 0
    assert status["finops"]["node_cost_24h"] == pytest.approx(finops["node_cost_24h"])
    metrics = client.get("/metrics").text
    assert f'forecaster_gpu_hours_24h{{kind="nodes",pool="{POOL}"}}' in metrics
    assert client.get("/api/v1/history", params={"pool": "nope"}).status_code == 404


def test_the_operating_point_and_its_alternatives_are_shown(tmp_path: Path) -> None:
    source = LiveSource(T0 - 2 * 86400, calm_history())
    chosen = operating_point(
        [
            Candidate(0.8, 1030.0, 20.0, 60.0, 0.01, floor_gpus=8),
            Candidate(0.95, 1090.0, 10.0, 30.0, 0.0),
        ],
        reactive_gpu_hours=1000.0,
        budget=Budget(percent=5),
        window=(T0 - 3 * 86400, T0 - 2 * 86400),
    )
    assert chosen is not None and (chosen.quantile, chosen.floor_gpus) == (0.8, 8)
    publish_with_point(tmp_path / "models", source, chosen)
    config = settings(tmp_path, operating_point={"budget_percent": 5})
    loop = build.build_reconciler(config, source=source, what_if=True)
    daemon = Daemon(reconciler=loop, pools=(POOL,))
    daemon.reconcile(T0)
    client = TestClient(create_app(daemon))
    status = client.get("/api/v1/status").json()
    shown = status["pools"][POOL]["operating_point"]
    assert shown == json.loads(json.dumps(chosen.to_dict()))
    assert [(c["quantile"], c["floor_gpus"]) for c in shown["candidates"]] == [(0.8, 8), (0.95, 0)]
    assert shown["floor_gpus"] == 8 and "P80+8" in shown["reason"]  # the alternatives too
    assert status["budgets"]["max_prewarm_gpu_hours_per_day"] == pytest.approx(50.0)
    history = client.get("/api/v1/history", params={"pool": POOL}).json()
    assert history["max_waste_gpu_hours_per_day"] == pytest.approx(50.0)
    assert history["forecasts"]["quantile"] == 0.8
    metrics = client.get("/metrics").text
    assert f'forecaster_plan_quantile{{pool="{POOL}"}} 0.8' in metrics
    assert f'forecaster_plan_floor_gpus{{pool="{POOL}"}} 8.0' in metrics
    assert 'id="operating-point"' in client.get("/").text


def test_the_endpoint_reads_the_published_tick_and_never_the_live_state(daemon: Daemon) -> None:
    """The endpoint runs on its own thread: it reads the last tick's immutable record, so a
    tick changing the state under it (here: a hand-off not yet published) is not half-shown,
    and a pool it is asked about is never inserted into the loop's state."""
    daemon.reconcile(T0)
    client = TestClient(create_app(daemon))
    state = daemon.reconciler.state
    state.pools[POOL].budget = ErrorBudgetState(mode=Mode.HANDED_OFF, since=T0, reason="mid-tick")
    status = client.get("/api/v1/status").json()["pools"][POOL]
    assert (status["mode"], status["reason"]) == ("predictive", "started in predictive mode")
    del state.pools[POOL]
    assert client.get("/api/v1/status").json()["pools"][POOL]["mode"] == "predictive"
    assert POOL not in state.pools
    daemon.reconcile(T0 + 60)  # the next tick publishes what the state holds then
    assert client.get("/api/v1/status").json()["pools"][POOL]["mode"] == "predictive"
