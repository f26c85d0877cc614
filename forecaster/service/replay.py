"""Replay a job trace through the twin under each policy - including the real predictive one.

``Predictive`` is the daemon's decision path in simulated time: it retrains weekly on the demand
the twin has shown it so far (never later data), forecasts the P95 at the lead time every
``forecast_every_seconds``, scores past forecasts, runs the error budget (with waste from
placeholders that ended unused) and plans with the same planner and caps.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from forecaster.core.cluster import DemandForecast
from forecaster.core.error_budget import ErrorBudgetState, Evaluation, SloPolicy, advance
from forecaster.core.jobs import JobTrace
from forecaster.core.planner import Mode
from forecaster.core.policy import Budgets, PoolPolicy, covering_horizon, prewarm_window_seconds
from forecaster.core.series import DemandSeries
from forecaster.durations import DAY
from forecaster.errors import ForecasterError
from forecaster.forecasting.base import Forecaster
from forecaster.forecasting.registry import build
from forecaster.simulation.metrics import ReplayMetrics, measure
from forecaster.simulation.policies import (
    POLICY_NAMES,
    Burst,
    Oracle,
    PlannedPrewarm,
    Reactive,
    Schedule,
    Static,
)
from forecaster.simulation.twin import Decision, Policy, Twin, TwinConfig, TwinRecord, TwinView

log = logging.getLogger(__name__)
POLICIES = POLICY_NAMES


@dataclass
class Predictive:
    """The forecaster + planner + error budget, retrained weekly on past data only."""

    planner: PlannedPrewarm
    model_name: str
    horizons_seconds: tuple[int, ...]
    horizon_seconds: int
    slo: SloPolicy
    plan_quantile: float = 0.95
    """The forecast quantile the planner prewarms for (the daemon's target_quantile)."""
    train_seconds: int = 28 * DAY
    min_train_seconds: int = 7 * DAY
    retrain_every_seconds: int = 7 * DAY
    forecast_every_seconds: int = 300
    lookback_seconds: int = 2 * DAY + 3600
    name: str = "predictive"
    model: Forecaster | None = None
    budget: ErrorBudgetState = field(default_factory=ErrorBudgetState)
    pending: list[tuple[int, float]] = field(default_factory=list)
    forecast: DemandForecast | None = None
    handoffs: int = 0
    fits: list[tuple[int, int]] = field(default_factory=list)
    """(fit time, end of the training data) per retrain - tests check end <= fit time."""
    _next_retrain: float = -math.inf
    _counted: int = 0
    """Placeholders whose end the waste budget has been charged (``TwinView.ended_after``)."""

    def decide(self, view: TwinView) -> Decision:
        """One tick of the daemon's decision path, in simulated time."""
        now = int(view.now)
        if now >= self._next_retrain:
            self._retrain(view, now)
        if self.model is not None and (
            self.forecast is None or now - self.forecast.data_end >= self.forecast_every_seconds
        ):
            self._forecast(view)
        evaluations = self._score(view)
        self._counted, waste, _ = view.ended_after(self._counted)
        before = self.budget.mode
        self.budget = advance(
            self.budget, evaluations=evaluations, wasted_gpu_hours=waste, policy=self.slo, now=now
        )
        if (
            self.budget.mode is Mode.HANDED_OFF
            and before is not Mode.HANDED_OFF
            and before is Mode.PREDICTIVE
        ):
            self.handoffs += 1
        decision, _ = self.planner.decide(
            view.snapshot(), self.forecast, mode=self.budget.mode, now=now
        )
        return decision

    def _history(self, view: TwinView, since: float) -> DemandSeries:
        start, values = view.demand_history(since=since)
        return DemandSeries(
            start=start, step_seconds=60, values=values.astype(np.float64), name="replay"
        )

    def _retrain(self, view: TwinView, now: int) -> None:
        self._next_retrain = now + self.retrain_every_seconds
        history = self._history(view, now - self.train_seconds)
        if history.usable_seconds < self.min_train_seconds:
            return
        model = build(
            self.model_name,
            horizons_seconds=self.horizons_seconds,
            quantiles=(0.5, self.plan_quantile),
        )
        try:
            self.model = model.fit(history)
        except ForecasterError as exc:
            log.warning("replay retrain at %s failed (%s): keeping the previous model", now, exc)
            return
        self.fits.append((now, history.end))

    def _forecast(self, view: TwinView) -> None:
        assert self.model is not None
        history = self._history(view, view.now - self.lookback_seconds)
        if len(history) == 0:
            return
        origin = history.end
        forecast = self.model.predict(history, at=np.array([origin], dtype=np.int64))
        at = self.horizon_seconds
        p95 = float(forecast.values_at(quantile=self.plan_quantile, horizon_seconds=at)[0])
        p50 = float(forecast.values_at(quantile=0.5, horizon_seconds=self.horizon_seconds)[0])
        if math.isfinite(p95) and math.isfinite(p50):
            self.forecast = DemandForecast(
                "replay",
                p50,
                p95,
                data_end=origin,
                model=self.model_name,
                quantile=self.plan_quantile,
            )
            self.pending.append((origin + self.horizon_seconds, p95))

    def _score(self, view: TwinView) -> list[Evaluation]:
        if not self.pending:
            return []
        start, values = view.demand_history(since=self.pending[0][0])
        last = start + 60 * (values.size - 1)
        done = [(t, p) for t, p in self.pending if t <= last]
        self.pending = [(t, p) for t, p in self.pending if t > last]
        return [Evaluation(t, float(values[(t - start) // 60]), p) for t, p in done if t >= start]


@dataclass(frozen=True)
class ReplaySetup:
    """One replay's cluster, window, budgets and prices."""

    twin: TwinConfig
    start: int
    warmup_end: int
    end: int
    budgets: Budgets
    max_prewarm_gpus: int
    price_on_demand: float = 4.10
    price_spot: float = 1.60
    model: str = "quantreg-raw"
    horizons_seconds: tuple[int, ...] = (300, 600, 900)
    slo: SloPolicy = field(default_factory=SloPolicy)
    plan_quantile: float = 0.95

    @property
    def lead_seconds(self) -> int:
        """Provisioning + image pull (what prewarm must cover)."""
        return int(self.twin.provision_seconds + self.twin.image_pull_seconds)

    @property
    def window_seconds(self) -> int:
        """What a decision must cover: lead + the twin's decision interval + Karpenter's batch."""
        return prewarm_window_seconds(
            self.lead_seconds,
            int(self.twin.tick_seconds),
            batch_seconds=int(self.twin.batch_seconds),
        )

    @property
    def horizon_seconds(self) -> int:
        """The shortest forecast horizon covering the prewarm window."""
        return covering_horizon(self.window_seconds, self.horizons_seconds)

    def planner(self) -> PlannedPrewarm:
        """A fresh planner with the setup's caps."""
        policy = PoolPolicy(
            pool=self.twin.pool,
            gpus_per_node=self.twin.gpus_per_node,
            placeholder_size_gpus=self.twin.gpus_per_node,
            max_prewarm_gpus=self.max_prewarm_gpus,
            price_per_gpu_hour=self.price_on_demand,
            stale_after_seconds=900,
            hold_seconds=900,
            allow_unlimited_nodepool=self.twin.nodepool_limit_gpus is None,
        )
        return PlannedPrewarm(policy, self.budgets)


def make_policy(name: str, setup: ReplaySetup, *, jobs: JobTrace, static_gpus: int = 64) -> Policy:
    """A fresh policy by name (``static:K`` sets the headroom)."""
    if name == "reactive":
        return Reactive()
    if name.startswith("static"):
        gpus = int(name.split(":", 1)[1]) if ":" in name else static_gpus
        return Static(gpus, name=f"static:{gpus}")
    if name == "schedule":
        return Schedule(lead_seconds=setup.lead_seconds, gpus_per_node=setup.twin.gpus_per_node)
    if name.startswith("burst"):
        alpha = float(name.split(":", 1)[1]) if ":" in name else 1.0
        return Burst(
            window_seconds=prewarm_window_seconds(
                setup.lead_seconds,
                int(Burst.tick_seconds),
                batch_seconds=int(setup.twin.batch_seconds),
            ),
            gpus_per_node=setup.twin.gpus_per_node,
            max_gpus=setup.max_prewarm_gpus,
            alpha=alpha,
            name=f"burst:{alpha:g}",
        )
    if name == "oracle":
        start = setup.start - setup.start % 60
        demand = jobs.demand(start=start, end=setup.end + 3600)
        return Oracle(setup.planner(), setup.window_seconds, start, demand)
    if name == "predictive":
        return Predictive(
            setup.planner(),
            setup.model,
            setup.horizons_seconds,
            setup.horizon_seconds,
            setup.slo,
            plan_quantile=setup.plan_quantile,
        )
    raise ForecasterError(f"unknown policy {name!r}; known: {', '.join(POLICIES)} (static:K)")


@dataclass(frozen=True)
class ReplayResult:
    """One policy's run."""

    policy: str
    metrics: ReplayMetrics
    record: TwinRecord


def replay(
    jobs: JobTrace,
    policy: Policy,
    *,
    setup: ReplaySetup,
    progress: Callable[[float], None] | None = None,
) -> ReplayResult:
    """Run one policy and measure it over the window after warm-up."""
    record = Twin(
        jobs, policy, setup.twin, start=setup.start, end=setup.end, progress=progress
    ).run()
    metrics = measure(
        record,
        window=(setup.warmup_end, setup.end),
        price_on_demand=setup.price_on_demand,
        price_spot=setup.price_spot,
        handoffs=getattr(policy, "handoffs", 0),
    )
    return ReplayResult(policy.name, metrics, record)
