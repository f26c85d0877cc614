"""Replay a job trace through the twin under each policy - including the daemon's own.

``predictive`` is not a model of the daemon: it is the daemon's reconcile loop
(``reconcile.loop.Reconciler``) ticking in simulated time against the twin through the same
ports it uses in a cluster (``simulation.live.TwinPorts``) - the same forecast at the same
horizon and quantile, scoring, error budget (with waste from placeholders that ended unused),
planner, caps and spend ledger. Only the training CronJob is stood in for: ``WeeklyRetrain``
fits the setup's model on the demand the twin has shown so far (never later data), weekly.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from forecaster.core.error_budget import SloPolicy, following_the_plan
from forecaster.core.jobs import JobTrace
from forecaster.core.notice import Outcome
from forecaster.core.planner import Mode
from forecaster.core.policy import Budgets, covering_horizon, prewarm_window_seconds
from forecaster.core.series import DemandSeries
from forecaster.durations import DAY
from forecaster.errors import ForecasterError
from forecaster.forecasting.registry import build
from forecaster.forecasting.training import fit_rise
from forecaster.reconcile.loop import Reconciler
from forecaster.reconcile.models import ActiveModel
from forecaster.reconcile.records import PoolRuntime
from forecaster.simulation.live import TwinPorts
from forecaster.simulation.metrics import ReplayMetrics, measure
from forecaster.simulation.twin import Decision, Policy, Twin, TwinConfig, TwinRecord, TwinView
from forecaster.sources.inputs import gather

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetrainSchedule:
    """How replay stands in for the weekly training CronJob."""

    train_seconds: int = 28 * DAY
    """History each fit sees (the CronJob's ``history_days``)."""
    min_train_seconds: int = 7 * DAY
    """Before this much usable history there is no model yet (the warm-up prewarms nothing)."""
    every_seconds: int = 7 * DAY


class WeeklyRetrain:
    """The reconcile loop's models in replay: one model fitted on past data only, weekly.

    Until the first fit (too little history, or a failed fit) there is no model and the loop
    prewarms nothing: that is the replay's warm-up, which it does not measure. (The daemon with
    no artifact fits the fallback baseline every tick instead - too slow to repeat for weeks of
    simulated minutes, and outside the measured window anyway.)"""

    def __init__(
        self,
        *,
        source: TwinPorts,
        clock: Callable[[], float],
        model_name: str,
        horizons_seconds: tuple[int, ...],
        quantiles: tuple[float, ...],
        schedule: RetrainSchedule,
        arrivals: bool = True,
        burst_alpha: float | None = None,
    ) -> None:
        self.source = source
        self.arrivals = arrivals
        self.burst_alpha = burst_alpha
        """Set: the burst rule at this share in the arrivals model's place (``fit_rise``)."""
        self.clock = clock
        self.model_name = model_name
        self.horizons_seconds = horizons_seconds
        self.quantiles = quantiles
        self.schedule = schedule
        self.current: ActiveModel | None = None
        self.fits: list[tuple[int, int]] = []
        """(fit time, end of the training data) per fit - tests check end < fit time."""
        self._next = -float("inf")

    def get(self, pool: str, *, history: DemandSeries) -> ActiveModel | None:
        """The last weekly fit; retrains first when one is due (see the class docstring)."""
        now = int(self.clock())
        if now >= self._next:
            self._next = now + self.schedule.every_seconds
            self._retrain(pool, now)
        return self.current

    def _retrain(self, pool: str, now: int) -> None:
        try:
            inputs = gather(
                self.source,
                pool,
                start=now - self.schedule.train_seconds,
                end=now,
                step_seconds=60,
                arrivals=self.arrivals,
            )
        except ForecasterError:
            return
        history = inputs.demand
        if history.usable_seconds < self.schedule.min_train_seconds:
            return
        model = build(
            self.model_name, horizons_seconds=self.horizons_seconds, quantiles=self.quantiles
        )
        try:
            fitted = model.fit(history)
        except ForecasterError as exc:
            log.warning("replay retrain at %s failed (%s): keeping the previous model", now, exc)
            return
        arrivals, _ = fit_rise(
            history,
            inputs.arrivals,
            horizons_seconds=self.horizons_seconds,
            quantiles=self.quantiles,
            burst_alpha=self.burst_alpha,
        )
        self.current = ActiveModel(fitted, self.model_name, f"replay-{now}", arrivals)
        self.fits.append((now, history.end))


class Predictive:
    """The daemon's reconcile loop as a replay policy (see the module docstring; wired by
    ``app.build_replay.predictive``)."""

    name = "predictive"

    def __init__(self, *, reconciler: Reconciler, ports: TwinPorts, models: WeeklyRetrain) -> None:
        self.reconciler = reconciler
        self.ports = ports
        self.models = models
        self.handoffs = 0
        self.notice_ended: list[Outcome] = []
        """Every announced item the daemon's ledger resolved, over the whole run (the ledger
        itself keeps 8 days): what ``simulation.declared_notice.notice_hold`` sums."""
        self._has_data = False

    def decide(self, view: TwinView) -> Decision:
        """One reconcile tick at the twin's time; the twin carries out what it applied. Not
        before the twin has recorded its first minute of demand: a daemon is not started on an
        empty Prometheus, and its loop would log each such tick as a data error."""
        if not self._has_data:
            self._has_data = view.demand_history(since=view.now - 60)[1].size > 0
            if not self._has_data:
                return self.ports.decision
        self.ports.view = view
        record = self.reconciler.tick(int(view.now))
        self.notice_ended += record.notice_ended
        self.handoffs += sum(
            1
            for _, t in record.transitions
            if t.before is Mode.PREDICTIVE and t.after is Mode.HANDED_OFF
        )
        return self.ports.decision


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
    slo: SloPolicy | None = None
    """None: the SLO follows the plan (``core.error_budget.following_the_plan``), as the
    daemon's does when the config leaves it out."""
    plan_quantile: float = 0.95
    floor_gpus: int = 0
    """GPUs the predictive pool keeps warm whatever the forecast (``PoolPolicy.floor_gpus``)."""
    retrain: RetrainSchedule = field(default_factory=RetrainSchedule)
    arrivals: bool = True
    """Whether the retrains fit the arrivals model (the pool's training has pods' creation
    times); without, the plan follows the level model, as the daemon's does."""
    burst_alpha: float | None = None
    """Set: the retrains fit the daemon's burst rule at this share in the arrivals model's place,
    as for a pool with ``policy: burst`` (``forecasting.burst``; replay's ``burst-live:ALPHA``)."""
    runtime: PoolRuntime | None = None
    """The pool as a configured daemon runs it (``app.build.pool_runtime``: its policy, horizon,
    quantile and lead); None: replay's own whole-node pool built from the fields above."""

    @property
    def slo_policy(self) -> SloPolicy:
        """The error budget's SLO: as given, or following the plan's quantile and budget."""
        if self.slo is not None:
            return self.slo
        return following_the_plan(
            SloPolicy(),
            target_quantile=self.plan_quantile,
            prewarm_gpu_hours_per_day=self.budgets.max_prewarm_gpu_hours_per_day,
        )

    def at_point(self, quantile: float, floor_gpus: int = 0) -> ReplaySetup:
        """This setup planning for ``quantile`` above a floor of ``floor_gpus`` (the configured
        pool's runtime too)."""
        runtime = self.runtime
        if runtime is not None:
            policy = dataclasses.replace(runtime.policy, floor_gpus=floor_gpus)
            runtime = dataclasses.replace(runtime, target_quantile=quantile, policy=policy)
        return dataclasses.replace(
            self, plan_quantile=quantile, floor_gpus=floor_gpus, runtime=runtime
        )

    @property
    def price_per_gpu_hour(self) -> float:
        """What the planner charges a prewarm GPU-hour (the cost cap's price): the configured
        pool's, else the on-demand price."""
        return self.runtime.policy.price_per_gpu_hour if self.runtime else self.price_on_demand

    @property
    def capped_twin(self) -> TwinConfig:
        """The twin with the planner's shared caps, so a tick above any of them counts as a
        breach (``TwinConfig.budgets``)."""
        return dataclasses.replace(
            self.twin, budgets=self.budgets, price_per_gpu_hour=self.price_per_gpu_hour
        )

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


@dataclass(frozen=True)
class ReplayResult:
    """One policy's run."""

    policy: str
    metrics: ReplayMetrics
    record: TwinRecord
    notice_ended: tuple[Outcome, ...] = ()
    """The announced items the daemon resolved (a predictive policy's; others read none)."""


def replay(
    jobs: JobTrace,
    policy: Policy,
    *,
    setup: ReplaySetup,
    progress: Callable[[float], None] | None = None,
) -> ReplayResult:
    """Run one policy and measure it over the window after warm-up."""
    record = Twin(
        jobs, policy, setup.capped_twin, start=setup.start, end=setup.end, progress=progress
    ).run()
    metrics = measure(
        record,
        window=(setup.warmup_end, setup.end),
        price_on_demand=setup.price_on_demand,
        price_spot=setup.price_spot,
        handoffs=getattr(policy, "handoffs", 0),
    )
    return ReplayResult(policy.name, metrics, record, tuple(getattr(policy, "notice_ended", ())))
