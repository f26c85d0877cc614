"""The embedded default: the daemon on the cluster twin, stepped in simulated time.

Cases: after the warm-up a model is trained on the twin's own demand and published; ticks
forecast, plan and prewarm in the twin (placeholders appear there); a scheduled retrain
publishes a new version that the next tick hot-reloads (each retrain also chooses the operating
point, on the history so far, as the training job does); the endpoint serves it all.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from forecaster.app.build import build_embedded
from forecaster.core.operating_point import Budget, Candidate, OperatingPoint, operating_point
from forecaster.core.series import DemandSeries
from forecaster.service.embedded import summary
from forecaster.service.http import create_app
from forecaster.settings import PoolSettings, Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]
POINT = operating_point(
    [Candidate(0.95, 1050.0, 30.0, 90.0, 0.02)],
    reactive_gpu_hours=1000.0,
    budget=Budget(percent=10),
    window=(0, 86400),
)


def test_daemon_on_the_twin(tmp_path: Path) -> None:
    settings = load_settings(ROOT / "config" / "forecaster.yaml", env={})
    twin = settings.twin.model_copy(
        update={
            "warmup_days": 8,
            "models": ("persistence", "quantreg-raw"),
            "retrain_every_days": 0.25,
        }
    )
    settings = settings.model_copy(
        update={
            "twin": twin,
            "forecast": settings.forecast.model_copy(update={"min_history_days": 7}),
            "planning": settings.planning.model_copy(update={"stale_after_seconds": 600}),
        }
    )
    seen: list[tuple[str, int]] = []

    def choose_point(config: Settings, pool: PoolSettings, history: DemandSeries) -> OperatingPoint:
        seen.append((pool.name, history.end))
        assert POINT is not None
        return POINT

    run = build_embedded(settings, models_dir=tmp_path, choose_point=choose_point)
    first = run.store.current_version("itp")
    assert first is not None
    artifact = run.store.load_current("itp")
    assert artifact is not None and artifact.operating_point == POINT  # chosen at each retrain
    run.step(run.twin.now + 3 * 3600)
    record = run.daemon.last
    assert record is not None and run.daemon.ticks == 3 * 3600 // settings.reconcile_every_seconds
    view = record.pools["itp"]
    assert view.model_version == first and view.demand is not None
    assert max(p.prewarm_gpus["itp"] for p in run.daemon.trail) > 0
    assert run.twin.twin.snapshot().prewarm_gpus > 0
    # every placeholder that ended unused is charged to the waste budget once, and only once
    _, unused, taken = run.twin.twin.ended_after(0)
    charged = sum(p.spend["itp"].wasted_gpu_hours for p in run.daemon.trail)
    assert unused > 0 and charged == pytest.approx(unused)
    assert sum(p.spend["itp"].used_prewarm_gpus for p in run.daemon.trail) == taken
    assert "itp: predictive" in summary(run)
    run.step(run.twin.now + 4 * 3600)  # past the 6 h retrain: a new version, hot-reloaded
    assert run.store.current_version("itp") != first
    assert [p for p, _ in seen] == ["itp", "itp"] and seen[0][1] < seen[1][1] <= run.twin.now
    assert run.daemon.last is not None and run.daemon.last.pools[
        "itp"
    ].model_version == run.store.current_version("itp")
    client = TestClient(create_app(run.daemon))
    assert client.get("/api/v1/forecast", params={"pool": "itp"}).json()["forecast"]["upper"]


def test_each_hourly_line_names_the_cap_that_holds_prewarm_at_zero(tmp_path: Path) -> None:
    settings = load_settings(ROOT / "config" / "forecaster.yaml", env={})
    twin = settings.twin.model_copy(
        update={"warmup_days": 8, "models": ("persistence", "quantreg-raw")}
    )
    budgets = settings.planning.budgets.model_copy(update={"max_prewarm_gpu_hours_per_day": 40})
    settings = settings.model_copy(
        update={
            "twin": twin,
            "forecast": settings.forecast.model_copy(update={"min_history_days": 7}),
            "planning": settings.planning.model_copy(update={"budgets": budgets}),
        }
    )
    run = build_embedded(settings, models_dir=tmp_path)
    lines = []
    for _ in range(4):
        run.step(run.twin.now + 3600)
        lines.append(summary(run, speed=1000.0))
    held = [line for line in lines if "held at 0 by:" in line]
    assert held, lines  # 40 GPU-hours a day are spent within the first hours
    assert all("capped by GPU-hours/day budget" in line for line in held), held
    assert all("expired unused" in line and "running 1000x" in line for line in lines), lines
