"""The loop's arrivals path: the plan follows pods created lately, at every tick.

Cases: with an arrivals model and the cluster's counts, the plan's demand is demand now + the
model's peak rise (reasons say what drove it) and a burst in progress raises the prewarm at the
next tick without new history; without counts (or without the model) the level forecast plans;
history is fetched once a step however often the loop ticks; peak forecasts are scored against
the highest demand in their window and survive the state's JSON; the status endpoint says what
the plan covered and the counts it rested on.
"""

from __future__ import annotations

import dataclasses

import pytest
from fastapi.testclient import TestClient

from forecaster.core.cluster import PoolSnapshot, RecentArrivals
from forecaster.core.error_budget import SloPolicy
from forecaster.core.policy import Budgets
from forecaster.core.series import DemandSeries
from forecaster.forecasting.arrivals import ArrivalsModel
from forecaster.forecasting.registry import build
from forecaster.reconcile.loop import Reconciler
from forecaster.reconcile.models import ActiveModel
from forecaster.reconcile.records import PoolRuntime
from forecaster.reconcile.state import MemoryStateStore, PendingForecast, ServiceState
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.testing.fakes import LiveSource
from tests.factories import bursty, policy, snapshot

QUIET = RecentArrivals((0, 0, 1, 10))
BURST = RecentArrivals((8, 32, 32, 40))


@pytest.fixture(scope="module")
def arrivals_model() -> ArrivalsModel:
    demand, arrivals = bursty(14, seed=1)
    return ArrivalsModel(horizons_seconds=(600,), quantiles=(0.5, 0.95)).fit(demand, arrivals)


class Counting:
    """The pool's models, counting how often the loop asked (each ask is one history fetch)."""

    def __init__(self, arrivals: ArrivalsModel | None) -> None:
        self.arrivals = arrivals
        self.asked = 0

    def get(self, pool: str, *, history: DemandSeries) -> ActiveModel | None:
        self.asked += 1
        model = build("persistence", horizons_seconds=(600,), quantiles=(0.5, 0.95))
        return ActiveModel(model.fit(history), "persistence", "v1", self.arrivals)


def loop(
    models: Counting, seen: dict[str, PoolSnapshot], *, start: int
) -> tuple[Reconciler, LiveSource]:
    source = LiveSource(start - 2 * 86400, [36.0] * (2 * 1440 + 1))
    runtime = PoolRuntime(
        policy=policy(allow_unlimited_nodepool=True),
        horizon_seconds=600,
        target_quantile=0.95,
        decision_interval_seconds=15,
    )
    budgets = Budgets(
        max_total_prewarm_gpus=512,
        max_prewarm_gpu_hours_per_day=1e6,
        max_cost_per_hour=1e6,
        commitment_seconds=3600,
    )
    reconciler = Reconciler(
        pools=[runtime],
        source=source,
        models=models,
        budgets=budgets,
        slo=SloPolicy(),
        state_store=MemoryStateStore(),
        observe=lambda pools, now: {"a": seen["a"]},
    )
    return reconciler, source


def test_the_plan_follows_demand_now_plus_the_peak_rise(arrivals_model: ArrivalsModel) -> None:
    start = 1_800_003_600
    seen = {"a": snapshot(arrivals=QUIET)}
    reconciler, _ = loop(Counting(arrivals_model), seen, start=start)
    quiet = reconciler.tick(start)
    rise = arrivals_model.rise(level=36, recent=QUIET, at=start, horizon_seconds=600, quantile=0.95)
    pool_plan = quiet.plan.pool("a")
    assert pool_plan.demand_upper_gpus == pytest.approx(36 + rise)
    demand = quiet.pools["a"].demand
    assert demand is not None and demand.model == "arrivals" and demand.peak
    assert any("GPUs of pods created: 0 in 1 min, 0 in 5 min" in r for r in pool_plan.reasons)
    seen["a"] = snapshot(arrivals=BURST)  # 15 s later the API server shows a batch submission
    burst = reconciler.tick(start + 15)
    assert burst.plan.pool("a").target_gpus >= pool_plan.target_gpus + 16


def test_without_counts_or_model_the_level_forecast_plans(arrivals_model: ArrivalsModel) -> None:
    start = 1_800_003_600
    for models, seen in (
        (Counting(arrivals_model), {"a": snapshot()}),  # the cluster did not say (no counts)
        (Counting(None), {"a": snapshot(arrivals=BURST)}),  # trained without arrivals
    ):
        record = loop(models, seen, start=start)[0].tick(start)
        demand = record.pools["a"].demand
        assert demand is not None and demand.model == "persistence" and not demand.peak


def test_history_is_fetched_once_a_step_while_the_plan_is_made_every_tick(
    arrivals_model: ArrivalsModel,
) -> None:
    start = 1_800_003_600
    models = Counting(arrivals_model)
    seen = {"a": snapshot(arrivals=QUIET)}
    reconciler, source = loop(models, seen, start=start)
    targets = []
    for k in range(8):  # two minutes at 15 s
        if k == 5:
            seen["a"] = snapshot(arrivals=BURST)
        if k % 4 == 0 and k:
            source.append(36.0)
        targets.append(reconciler.tick(start + 15 * k).plan.pool("a").target_gpus)
    assert models.asked == 2
    assert targets[5] > targets[4]  # the burst is planned for at the tick that saw it


def test_peak_forecasts_are_scored_against_the_highest_demand_of_their_window(
    arrivals_model: ArrivalsModel,
) -> None:
    start = 1_800_003_600
    seen = {"a": snapshot(arrivals=QUIET)}
    reconciler, source = loop(Counting(arrivals_model), seen, start=start)
    first = reconciler.tick(start)
    upper = first.plan.pool("a").demand_upper_gpus
    pending = reconciler.state.pool("a").pending[-1]
    assert pending == PendingForecast(start, start + 600, upper, True)
    # demand peaks above the forecast mid-window and is back at 36 by its end
    source.append(*([36.0] * 4 + [upper + 10] + [36.0] * 6))
    record = reconciler.tick(start + 660)
    scored = [e for e in record.evaluations["a"] if e.target_time == start + 600]
    assert scored and scored[0].actual_gpus == upper + 10


def test_peak_pending_forecasts_survive_the_state_json() -> None:
    state = ServiceState()
    state.pool("a").pending = [PendingForecast(1, 601, 40.0, True), PendingForecast(2, 602, 9.0)]
    again = ServiceState.from_dict(state.to_dict())
    assert again.pool("a").pending == state.pool("a").pending
    old = state.to_dict()
    old["pools"]["a"]["pending"] = [[1, 601, 40.0]]  # written before peak forecasts existed
    assert ServiceState.from_dict(old).pool("a").pending == [PendingForecast(1, 601, 40.0)]


def test_recent_arrivals_need_one_count_per_window() -> None:
    with pytest.raises(ValueError, match="one count per"):
        RecentArrivals((1, 2))
    with pytest.raises(ValueError, match=">= 0"):
        dataclasses.replace(QUIET, gpus=(0, 0, -1, 0))


def test_the_status_says_what_the_plan_covered_and_why(arrivals_model: ArrivalsModel) -> None:
    start = 1_800_003_600
    reconciler, _ = loop(Counting(arrivals_model), {"a": snapshot(arrivals=BURST)}, start=start)
    daemon = Daemon(reconciler=reconciler, pools=("a",))
    assert daemon.reconcile(start) is not None
    shown = TestClient(create_app(daemon)).get("/api/v1/status").json()["pools"]["a"]
    demand = shown["plan_demand"]
    assert demand["model"] == "arrivals" and demand["peak_over_window"]
    assert demand["pods_created_gpus"] == {"1m": 8, "5m": 32, "15m": 32, "60m": 40}
    assert demand["upper_gpus"] == pytest.approx(reconciler.last.plan.pool("a").demand_upper_gpus)  # type: ignore[union-attr]
    assert "peak rise" in demand["basis"]


def test_the_rise_is_of_unannounced_work_and_announced_work_is_added_once(
    arrivals_model: ArrivalsModel,
) -> None:
    """Of the 36 GPUs running, 16 are a CronJob's run: the arrivals model rises from the 20
    unannounced ones, and the plan adds the 16 back once (36 + rise, not 52 + rise); the error
    budget judges the unannounced part (the history it is scored on leaves the run out)."""
    start = 1_800_003_600
    seen = {"a": snapshot(arrivals=QUIET, announced_real_gpus=16)}
    reconciler = loop(Counting(arrivals_model), seen, start=start)[0]
    record = reconciler.tick(start)
    rise = arrivals_model.rise(level=20, recent=QUIET, at=start, horizon_seconds=600, quantile=0.95)
    demand = record.pools["a"].demand
    assert demand is not None and demand.upper_gpus == pytest.approx(20 + rise)
    assert demand.basis.startswith("20 GPUs of unannounced work requested now")
    (planned,) = [r for r in record.plan.pool("a").reasons if "announced work run now" in r]
    assert planned.endswith(f"demand {36 + rise:.0f} (known work + the forecast of the rest)")
    judged = reconciler.state.pool("a").pending[-1]
    assert judged.upper_gpus == pytest.approx(20 + rise)
