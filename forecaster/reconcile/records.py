"""The values one tick reads and writes, and what the loop remembers of a pool between ticks.

In: ``PoolRuntime`` (a pool's configuration) and the two ports the loop is given (``Models``,
``PrewarmActuator``). Out: ``PoolView`` per pool and ``TickRecord`` per tick - immutable, so the
endpoint, the metrics and replay read them while the next tick runs. Kept: ``PoolTrack``, the
one mutable record per pool the loop carries from tick to tick.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from forecaster.core.actions import ActuationReport, Command, Halt
from forecaster.core.cluster import (
    ClaimedPods,
    DemandForecast,
    MeasuredLead,
    PoolSnapshot,
    Skipped,
    Unattributed,
)
from forecaster.core.error_budget import ErrorBudgetState, Evaluation, Transition
from forecaster.core.notice import NamespaceNotice, Outcome, SourceStatus
from forecaster.core.notice_use import PoolNotice
from forecaster.core.operating_point import OperatingPoint
from forecaster.core.planner import Plan
from forecaster.core.policy import PlanningHorizon, PoolPolicy, planning_horizon
from forecaster.core.series import DemandSeries, Forecast
from forecaster.reconcile.models import ActiveModel


class Models(Protocol):
    """Which model forecasts a pool: the published artifacts (``reconcile.models.ModelProvider``),
    or replay's weekly retraining in simulated time (``simulation.replay.WeeklyRetrain``)."""

    def get(self, pool: str, *, history: DemandSeries) -> ActiveModel | None:
        """The pool's model now (None: no usable history or model)."""
        ...


class PrewarmActuator(Protocol):
    """Carries out commands: the Kubernetes actuator, or the cluster twin."""

    def apply(self, commands: Sequence[Command], *, now: int) -> ActuationReport:
        """Carry out ``commands`` in order (``core.actions.commands(plan)``)."""
        ...


@dataclass(frozen=True)
class PoolRuntime:
    """What the loop needs per pool."""

    policy: PoolPolicy
    horizon_seconds: int
    target_quantile: float
    """The forecast quantile the planner prewarms for (``forecast.target_quantile``)."""
    assumed_limit_headroom_gpus: int | None = None
    """With no cluster to observe: the what-if NodePool limit is the assumed nodes plus this."""
    lead_seconds: int = 0
    """Node launch + image pull + margin: what a warm node spares a pod (FinOps estimate)."""
    horizons_seconds: tuple[int, ...] = ()
    """Every horizon the models forecast: once the pool's lead is measured the loop covers it
    with one of them (``core.policy.planning_horizon``); empty: always ``horizon_seconds``."""
    lead_margin_seconds: int = 0
    """Safety margin added to a measured lead (``lead_time.margin_seconds``)."""
    decision_interval_seconds: int = 60
    """How often the loop decides (``reconcile_every_seconds``): part of the prewarm window."""

    def horizon(self, measured: MeasuredLead | None) -> PlanningHorizon:
        """The horizon this tick covers, from the measured lead when there is enough of it
        (never with no ``horizons_seconds`` to choose from)."""
        usable = measured if self.horizons_seconds else None
        return planning_horizon(
            configured_lead_seconds=self.lead_seconds,
            configured_horizon_seconds=self.horizon_seconds,
            measured_lead_seconds=usable.total_seconds if usable else None,
            measured_launches=usable.launches if usable else 0,
            margin_seconds=self.lead_margin_seconds,
            decision_interval_seconds=self.decision_interval_seconds,
            horizons_seconds=self.horizons_seconds,
        )


@dataclass(frozen=True)
class PoolView:
    """Everything about one pool in one tick, for logs and the inspection endpoint."""

    pool: str
    model: str | None
    model_version: str | None
    forecast: Forecast | None
    demand: DemandForecast | None
    history: DemandSeries | None
    quality: tuple[str, ...]
    snapshot: PoolSnapshot | None
    evaluated: int
    quantile: float
    """The target quantile of ``forecast`` that the plan used (``DemandForecast.upper_gpus``)."""
    horizon: PlanningHorizon | None = None
    """The horizon the plan used and why (configured, or from the measured lead)."""
    operating_point: OperatingPoint | None = None
    """The quantile and GPU-hours budget chosen at the last retrain (``core.operating_point``),
    when the pool follows one: its quantile is ``quantile``."""
    floor_gpus: int = 0
    """The floor the plan kept warm whatever the forecast (``Reconciler.policy_for``)."""


@dataclass(frozen=True)
class TickError:
    """A problem one tick met, and where."""

    kind: str
    """data, model, forecast, crash, actuate, cluster or state: the label of
    ``forecaster_reconcile_errors_total``."""
    pool: str | None
    """The pool it concerns; None for the whole tick (cluster unobservable, state)."""
    message: str


@dataclass(frozen=True)
class TickRecord:
    """The outcome of one tick."""

    at: int
    plan: Plan
    pools: dict[str, PoolView]
    transitions: tuple[tuple[str, Transition], ...]
    """Mode changes this tick, as (pool, transition)."""
    actuation: ActuationReport | None
    errors: tuple[TickError, ...] = ()
    """Problems met this tick, in the order met."""
    halt: Halt | None = None
    """The kill switch, when on: this tick withdrew every prewarm."""

    def budget(self, pool: str) -> ErrorBudgetState:
        """The pool's published error budget (the start state for a pool this tick lacks)."""
        found = self.budgets.get(pool)
        return found if found is not None else ErrorBudgetState()

    def error(self, kind: str, pool: str | None = None) -> str | None:
        """The message of the last ``kind`` error of ``pool`` (None: there was none)."""
        found = [e.message for e in self.errors if e.kind == kind and e.pool == pool]
        return found[-1] if found else None

    unattributed: tuple[Unattributed, ...] = ()
    """Pending GPU pods no NodePool can serve (Karpenter will not launch for them)."""
    evaluations: dict[str, tuple[Evaluation, ...]] = field(default_factory=dict)
    """Past forecasts scored this tick, per pool (calibration as the page shows it)."""
    replanned: bool = True
    """False for a quiet tick: the cluster looked as at the last plan, which stands."""
    claimed: tuple[ClaimedPods, ...] = ()
    """Live pods asking for devices through DRA claims (never prewarmed: reported)."""
    notice: tuple[SourceStatus, ...] = ()
    """How each notice source fared at this tick's observation."""
    notice_ended: tuple[Outcome, ...] = ()
    """Announced items that ended this tick (came or withdrawn), with the notice they gave."""
    notice_pools: tuple[PoolNotice, ...] = ()
    """Each pool's announced work per source over 7 days, in GPU-hours by notice
    (``NoticeLedger.by_pool``)."""
    notice_namespaces: tuple[NamespaceNotice, ...] = ()
    """The namespaces whose announced work held the most prewarm in 7 days (``doctor``, the
    status): precision and waste per namespace."""
    budgets: dict[str, ErrorBudgetState] = field(default_factory=dict)
    """Each configured pool's error budget after this tick (immutable): what the endpoint and
    the metrics read, from their own threads - never the loop's live state."""
    skipped: tuple[Skipped, ...] = ()
    """Pods and notice objects passed over at this tick's observation (each costs itself)."""


@dataclass
class PoolTrack:
    """What the loop remembers of one pool from tick to tick (one record, not side maps)."""

    active: ActiveModel | None = None
    """The model of the last fetch: its arrivals part and operating point steer every tick."""
    last_demand: DemandForecast | None = None
    """The last finite level forecast: kept while fresh data cannot be fetched (goes stale)."""
    fetched: tuple[int, PoolView] | None = None
    """When the history was last fetched, and the view made from it (reused within a step)."""
    horizon_seconds: int | None = None
    """The horizon last planned for: a move (measured lead) is logged."""
    wasted_gpu_hours: float = 0.0
    """What the actuator reported wasted at the last act: the error budget charges it."""
