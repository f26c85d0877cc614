"""One reconcile tick: observe -> fetch -> forecast -> score -> plan -> act -> record.

``Reconciler.tick(now)`` is the whole daemon step; the scheduler only calls it. Two paths share
it: demand history is fetched and the level forecast refreshed once per ``step_seconds`` (a
minute: the scrape is no fresher), while the cluster is observed and the plan made at every
tick. Where the pool's model has a peak-additional-demand part (``forecasting.arrivals``), the
plan follows it: demand now + the peak rise expected within the window, from the pods created
in the last minutes as the API server shows them - so a batch submission is answered at the next
tick, not after the next scrape. It never raises
for a data, model or cluster problem: each is logged, kept in the ``TickRecord`` and handled the
safe way - a pool whose data cannot be fetched keeps its last forecast, which turns stale (no
new prewarm, existing prewarm held for ``hold_seconds``, then withdrawn); a cluster that cannot
be observed is not acted on (placeholders expire by themselves); a model that cannot be loaded
is replaced by the persistence baseline.

A tick whose observation matches the last plan's - no pod created, started, finished or
preempted, no node come or gone, the kill switch as it was - within ``step_seconds`` of that plan
is *quiet*: it keeps the plan and writes nothing (``TickRecord.replanned`` False). So the loop
answers new pods within one tick (15 s) yet forecasts, plans and acts about once a minute when
nothing happens - and replay's 50 days of 15 s decisions cost what the minutes that changed
something cost.

A model published with an operating point (``core.operating_point``: chosen at the retrain for
the operator's budget, when one is configured) sets the pool's quantile, its floor
(``policy_for``), its SLO
(``slo_for``) and - once every pool has one - the shared GPU-hours/day cap
(``effective_budgets``); without one the configured quantile, SLO and caps hold.

The state (ledger, error budget) is persisted every ``SAVE_EVERY_SECONDS`` (5 min) and at once on
a change of mode: a ConfigMap write per 15 s tick is API load for nothing, and a restart loses at
most those minutes of tallies - the ledger charges the time since the last save anyway (up to the
placeholder TTL, see ``core.budget``).

``scripts/mutation_check.py`` pins exact lines of this module (it breaks them on purpose): a
change to a pinned line updates the mutation's strings there, never drops the mutation.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from forecaster.core.actions import ActuationReport, Command, Halt, commands
from forecaster.core.budget import record_spend, spent_last_day
from forecaster.core.cluster import (
    ARRIVAL_WINDOWS_SECONDS,
    DemandForecast,
    MeasuredLead,
    Observation,
    PoolSnapshot,
    Unattributed,
    assumed_snapshot,
)
from forecaster.core.error_budget import Evaluation, SloPolicy, Transition, advance
from forecaster.core.notice import NoticeLedger, Outcome, SourceStatus, due_items
from forecaster.core.operating_point import (
    OperatingPoint,
    following_the_point,
    following_the_points,
)
from forecaster.core.planner import (
    Mode,
    Plan,
    PoolInput,
    announced_gpus,
    plan,
    planned_demand,
)
from forecaster.core.policy import Budgets, PlanningHorizon, PoolPolicy, planning_horizon
from forecaster.core.quality import QualityReport
from forecaster.core.series import DemandSeries, Forecast
from forecaster.durations import DAY
from forecaster.errors import ConflictError, ForecasterError, ModelError
from forecaster.reconcile.models import ActiveModel
from forecaster.reconcile.state import PendingForecast, PoolState, ServiceState, StateStore
from forecaster.sources.base import DemandSource

log = logging.getLogger(__name__)
SAVE_EVERY_SECONDS = 300
"""Persist the state at least this often (and at every change of mode): the tallies are kept in
5-minute buckets (``core.budget.BUCKET_SECONDS``), so a crash loses at most about one."""
Observer = Callable[[Sequence[str], int], Mapping[str, PoolSnapshot]]
HaltReader = Callable[[], Halt | None]
"""Reads the on-call kill switch (``actuators.control``); raises ``ForecasterError`` if it can't."""


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
    notice: tuple[SourceStatus, ...] = ()
    """How each notice source fared at this tick's observation."""
    notice_ended: tuple[Outcome, ...] = ()
    """Announced items that ended this tick (came or withdrawn), with the notice they gave."""


class Reconciler:
    """Holds the wiring; ``tick(now)`` does one pass. See the module docstring."""

    def __init__(
        self,
        *,
        pools: Sequence[PoolRuntime],
        source: DemandSource,
        models: Models,
        budgets: Budgets,
        slo: SloPolicy,
        state_store: StateStore,
        step_seconds: int = 60,
        lookback_seconds: int = 2 * DAY + 3600,
        observe: Observer | None = None,
        actuator: PrewarmActuator | None = None,
        halt: HaltReader | None = None,
    ) -> None:
        self.pools = list(pools)
        self.source = source
        self.models = models
        self.budgets = budgets
        self.slo = slo
        self.state_store = state_store
        self.step_seconds = step_seconds
        self.lookback_seconds = lookback_seconds
        self.observe = observe
        self.actuator = actuator
        self.read_halt = halt
        self.state = ServiceState()
        self.notice_ledger = NoticeLedger()
        """Announced items followed to their end: each notice source's precision and waste."""
        self._loaded = False
        self._last_demand: dict[str, DemandForecast] = {}
        self._last_waste: dict[str, float] = {}
        self._horizons: dict[str, int] = {}  # per pool, to log when the measured lead moves it
        self._active: dict[str, ActiveModel] = {}  # per pool: the model of the last fetch
        self._fetched: dict[str, tuple[int, PoolView]] = {}  # per pool: last fetch and its view
        self._saved_at: int | None = None  # when the state was last persisted
        self._saved_modes: dict[str, Mode] = {}  # and each pool's mode in it
        self.last: TickRecord | None = None
        self._planned: TickRecord | None = None  # the last tick that planned (not quiet)

    def tick(self, now: int, *, act: bool = True, not_acting: str | None = None) -> TickRecord:
        """One reconcile pass at ``now`` (epoch seconds).

        ``act=False`` (a replica that is not the leader): forecast and plan, write nothing -
        neither to the cluster nor to the persisted state; ``not_acting`` says why on each
        pool's line (e.g. who holds the Lease, until when).
        """
        errors: list[TickError] = []
        self._load_state(errors, now=now)
        snapshots = self._observe(now, errors)
        halt, readable = self._halt(errors)
        if not readable:
            snapshots = None  # the kill switch may be on: do not act on a guess
        if act and self._quiet(snapshots, halt, now, errors):
            self.last = self._kept(snapshots, now)
            return self.last
        inputs, views, transitions = [], {}, []
        scored: dict[str, tuple[Evaluation, ...]] = {}
        ended = self._follow_notice(snapshots, now) if act and snapshots else ()
        distrusted = self.notice_ledger.distrusted(now=now)
        for runtime in self.pools:
            name = runtime.policy.pool
            pool_state = self.state.pool(name)
            measured = snapshots[name].measured_lead if snapshots and name in snapshots else None
            horizon = runtime.horizon(measured)
            if self._horizons.get(name) not in (None, horizon.horizon_seconds):
                log.warning(
                    "pool %s: forecasting %d s ahead now (%s)", name, horizon.horizon_seconds,
                    horizon.reason,
                )  # fmt: skip
            self._horizons[name] = horizon.horizon_seconds
            fetched = self._fetched.get(name)
            evaluations: list[Evaluation] = []
            try:
                if fetched is not None and now - fetched[0] < self.step_seconds:
                    view = fetched[1]  # the history is no fresher yet
                else:
                    view, evaluations = self._forecast(
                        runtime, pool_state, now, errors, horizon=horizon
                    )
            except Exception as exc:  # a bug or malformed input harms only this pool
                log.exception("pool %s: forecasting failed; the pool withdraws this tick", name)
                errors.append(TickError("crash", name, f"{type(exc).__name__}: {exc}"))
                view, evaluations = _no_forecast(runtime), []
            scored[name] = tuple(evaluations)
            transitions += self._advance(name, pool_state, evaluations, now)
            snapshot = snapshots[name] if snapshots else self._assumed(runtime, view, now)
            view = self._with_arrivals(runtime, view, snapshot, now, errors, horizon=horizon)
            _remember(
                pool_state,
                _as_planned(
                    view.demand,
                    snapshot,
                    window_seconds=horizon.horizon_seconds,
                    distrusted=distrusted,
                ),
                horizon.horizon_seconds,
                step=self.step_seconds,
            )
            policy = self.policy_for(runtime)
            views[name] = PoolView(
                **{**view.__dict__, "snapshot": snapshot, "floor_gpus": policy.floor_gpus}
            )
            inputs.append(
                PoolInput(
                    policy,
                    snapshot,
                    view.demand,
                    pool_state.budget.mode,
                    window_seconds=horizon.horizon_seconds,
                    distrusted=distrusted,
                )
            )
        spent = math.inf if not self._loaded else spent_last_day(self.state.ledger)
        decision = plan(
            inputs,
            budgets=self.effective_budgets(),
            spent_gpu_hours_last_day=spent,
            now=now,
            halted=halt.reason if halt else None,
        )
        report = self._act(decision, snapshots, now, errors) if act else None
        if act and self._loaded:
            self._record(snapshots, now, errors, halted=halt is not None)
        if not act:
            self._loaded = False  # a follower re-reads each tick: fresh when it takes over
        _log_decision(
            decision, "" if act else f" [writes nothing: {not_acting or 'not the leader'}]"
        )
        observed = snapshots if isinstance(snapshots, Observation) else Observation()
        self.last = self._planned = TickRecord(
            now,
            decision,
            views,
            tuple(transitions),
            report,
            tuple(errors),
            halt,
            observed.unattributed,
            scored,
            notice=tuple(self.notice_ledger.judged(n, now=now) for n in observed.notice),
            notice_ended=ended,
        )
        return self.last

    # ---- quiet ticks -------------------------------------------------------------------------
    def _quiet(
        self,
        snapshots: Mapping[str, PoolSnapshot] | None,
        halt: Halt | None,
        now: int,
        errors: list[TickError],
    ) -> bool:
        """True when the last plan stands: it was complete and recent (within ``step_seconds``,
        so fresh history still triggers a forecast), and every pool looks as it did then."""
        last = self._planned
        if last is None or last.errors or errors or snapshots is None:
            return False
        if not self._loaded or not 0 <= now - last.at < self.step_seconds or halt != last.halt:
            return False
        for pool_plan in last.plan.pools:
            if self.state.pool(pool_plan.pool).budget.mode is not pool_plan.mode:
                return False  # the state changed under the plan (another leader's, a restore)
        for runtime in self.pools:
            name = runtime.policy.pool
            before = last.pools[name].snapshot if name in last.pools else None
            after = snapshots.get(name)
            if before is None or after is None or not _same_pool(before, after):
                return False
            window = self._horizons.get(name, 0)
            if due_items(after.announced, now, within_seconds=window) != due_items(
                before.announced, last.at, within_seconds=window
            ):
                return False  # announced work came into (or left) the window: plan again
        return True

    def _advance(
        self, name: str, pool_state: PoolState, evaluations: list[Evaluation], now: int
    ) -> list[tuple[str, Transition]]:
        """Move the pool's error budget on by this tick's scores; log each mode change."""
        before = len(pool_state.budget.transitions)
        pool_state.budget = advance(
            pool_state.budget,
            evaluations=evaluations,
            wasted_gpu_hours=self._last_waste.get(name, 0.0),
            policy=self.slo_for(name),
            now=now,
        )
        changed = pool_state.budget.transitions[before:]
        for transition in changed:
            log.warning(
                "pool %s: %s -> %s: %s",
                name,
                transition.before,
                transition.after,
                transition.reason,
            )
        return [(name, transition) for transition in changed]

    def _follow_notice(
        self, snapshots: Mapping[str, PoolSnapshot], now: int
    ) -> tuple[Outcome, ...]:
        """Record this reading's announced items; log the ones that did not come; return every
        item that ended. The leader only: a follower's verdicts would repeat the leader's."""
        readable = _readable_sources(snapshots)
        ended: list[Outcome] = []
        for name, snapshot in snapshots.items():
            for outcome in self.notice_ledger.observe(
                name,
                snapshot.announced,
                readable=readable,
                now=now,
                window_seconds=self._horizons.get(name, 0),
            ):
                ended.append(outcome)
                if not outcome.came:
                    log.warning(
                        "pool %s: %s did not come by its latest start: withdrawn, %.1f"
                        " GPU-hours held for it charged to notice source %s",
                        name,
                        outcome.key,
                        outcome.held_gpu_hours,
                        outcome.source,
                    )
        return tuple(ended)

    def _kept(self, snapshots: Mapping[str, PoolSnapshot] | None, now: int) -> TickRecord:
        """The record of a quiet tick: the last plan, today's observation, nothing done."""
        last = self._planned
        assert last is not None and snapshots is not None  # checked by ``_quiet``
        pools = {
            name: dataclasses.replace(view, snapshot=snapshots.get(name, view.snapshot))
            for name, view in last.pools.items()
        }
        report = last.actuation
        if report is not None:  # what the backends are stays; nothing was created or wasted
            report = ActuationReport(backend=report.backend, buffer_status=report.buffer_status)
        return dataclasses.replace(
            last,
            at=now,
            pools=pools,
            transitions=(),
            actuation=report,
            evaluations={},
            unattributed=snapshots.unattributed if isinstance(snapshots, Observation) else (),
            replanned=False,
            notice_ended=(),  # nothing was followed: the last tick's items are counted once
        )

    # ---- steps ---------------------------------------------------------------------------
    def _load_state(self, errors: list[TickError], *, now: int) -> None:
        if self._loaded:
            return
        try:
            saved = self.state_store.load()
            state = ServiceState() if saved is None else ServiceState.from_dict(saved)
        except (ForecasterError, ValueError, KeyError, TypeError, AttributeError) as exc:
            message = (
                f"could not read the persisted state ({exc}): acting as if the GPU-hours budget"
                " were spent until it can be read"
            )
            errors.append(TickError("state", None, message))
            log.error("%s", message)
            self.state_store.refused(message, now=now)
            return  # fail closed: never "start from zero" on a damaged, newer or lost state
        self._saved_at = None  # the next record saves: what was read is all the store has
        if saved is not None:
            self.state = state
            self.notice_ledger.outcomes = list(state.notice)
            for name, pool_state in self.state.pools.items():
                if pool_state.budget.mode.value != "predictive":
                    log.warning(
                        "pool %s: restored %s since %s: %s",
                        name,
                        pool_state.budget.mode,
                        pool_state.budget.since,
                        pool_state.budget.reason,
                    )
        self._loaded = True

    def _observe(self, now: int, errors: list[TickError]) -> Mapping[str, PoolSnapshot] | None:
        if self.observe is None:
            return None
        try:
            snapshots = self.observe([p.policy.pool for p in self.pools], now)
        except ForecasterError as exc:
            message = f"cannot observe the cluster, not acting this tick: {exc}"
            errors.append(TickError("cluster", None, message))
            log.error("%s", message)
            return None
        for lost in snapshots.unattributed if isinstance(snapshots, Observation) else ():
            log.warning(
                "%d pending pod(s) in namespace %s ask for %d GPUs that no NodePool can serve"
                " (nodeSelector/affinity/taints match none): not counted as any pool's demand",
                lost.pods,
                lost.namespace,
                lost.gpus,
            )
        for name, snapshot in snapshots.items():
            if snapshot.problem is not None:
                message = f"cannot observe the pool: {snapshot.problem}"
                errors.append(TickError("cluster", name, message))
                log.error("pool %s: %s; it withdraws its prewarm", name, message)
        return snapshots

    def _halt(self, errors: list[TickError]) -> tuple[Halt | None, bool]:
        """The kill switch, and whether it could be read at all."""
        if self.read_halt is None:
            return None, True
        try:
            halt = self.read_halt()
        except ForecasterError as exc:
            message = f"cannot read the kill switch, not acting this tick: {exc}"
            errors.append(TickError("cluster", None, message))
            log.error("%s", message)
            return None, False
        if halt is not None:
            log.warning(
                "kill switch on (%s, by %s): withdrawing every prewarm, nothing new",
                halt.reason,
                halt.by or "unknown",
            )
        return halt, True

    def _forecast(
        self,
        runtime: PoolRuntime,
        pool_state: PoolState,
        now: int,
        errors: list[TickError],
        *,
        horizon: PlanningHorizon,
    ) -> tuple[PoolView, list[Evaluation]]:
        name = runtime.policy.pool
        empty = PoolView(
            name, None, None, None, self._last_demand.get(name), None, (), None, 0,
            runtime.target_quantile, horizon,
        )  # fmt: skip
        try:
            series, quality = self.source.fetch(
                name, start=now - self.lookback_seconds, end=now, step_seconds=self.step_seconds
            )
        except ForecasterError as exc:
            errors.append(TickError("data", name, str(exc)))
            log.error(
                "pool %s: no fresh data (%s); keeping the last forecast, which goes stale",
                name,
                exc,
            )
            return empty, []
        evaluations = _score(pool_state, series)
        usable = np.flatnonzero(series.usable)
        active = self.models.get(name, history=series) if usable.size else None
        if active is not None:
            self._active[name] = active
        if active is None:
            errors.append(TickError("model", name, "no usable history or model"))
            return PoolView(
                **{**empty.__dict__, "history": series, "quality": _lines(quality)}
            ), evaluations
        origin = int(series.timestamps[usable[-1]])
        try:
            forecast = active.model.predict(series, at=np.array([origin], dtype=np.int64))
        except (ForecasterError, ValueError) as exc:
            errors.append(TickError("forecast", name, str(exc)))
            return PoolView(**{**empty.__dict__, "history": series}), evaluations
        q, ahead = self._quantile(runtime), horizon.horizon_seconds
        p95 = float(forecast.values_at(quantile=q, horizon_seconds=ahead)[0])
        p50 = float(forecast.values_at(quantile=0.5, horizon_seconds=ahead)[0])
        demand = self._last_demand.get(name)
        if math.isfinite(p95) and math.isfinite(p50):
            demand = DemandForecast(name, p50, p95, data_end=origin, model=active.name, quantile=q)
            self._last_demand[name] = demand
        view = PoolView(
            name,
            active.name,
            active.version,
            forecast,
            demand,
            series,
            _lines(quality),
            None,
            len(evaluations),
            q,
            horizon,
            active.operating_point,
        )
        self._fetched[name] = (now, view)
        return view, evaluations

    def _with_arrivals(
        self,
        runtime: PoolRuntime,
        view: PoolView,
        snapshot: PoolSnapshot,
        now: int,
        errors: list[TickError],
        *,
        horizon: PlanningHorizon,
    ) -> PoolView:
        """The view with the plan's demand from the arrivals model, when the pool has one and
        the cluster shows what was created lately; else as it was (the level forecast). Of
        unannounced work, as the level forecast: it rises from the GPUs of unannounced pods
        now (the plan adds announced work on top, ``core.planner.planned_demand``)."""
        name = runtime.policy.pool
        active = self._active.get(name)
        model = active.arrivals if active is not None else None
        recent = snapshot.arrivals
        if model is None or recent is None or snapshot.problem is not None:
            return view
        q, ahead, level = (
            self._quantile(runtime),
            horizon.horizon_seconds,
            snapshot.real_demand_gpus - snapshot.announced_real_gpus,
        )
        try:
            upper = model.rise(
                level=level, recent=recent, at=now, horizon_seconds=ahead, quantile=q
            )
            median = model.rise(
                level=level, recent=recent, at=now, horizon_seconds=ahead, quantile=0.5
            )
        except ModelError as exc:
            errors.append(TickError("forecast", name, f"arrivals model: {exc}"))
            return view
        created = ", ".join(
            f"{g} in {w // 60} min"
            for g, w in zip(recent.gpus, ARRIVAL_WINDOWS_SECONDS, strict=True)
        )
        demand = DemandForecast(
            name,
            level + median,
            level + upper,
            data_end=now,
            model="arrivals",
            quantile=q,
            peak=True,
            basis=f"{level} GPUs of unannounced work requested now + peak rise {upper:.1f}"
            f" within {ahead} s;"
            f" GPUs of pods created: {created}",
        )
        return PoolView(**{**view.__dict__, "demand": demand})

    # ---- the operating point chosen at the last retrain --------------------------------------
    def _point(self, pool: str) -> OperatingPoint | None:
        active = self._active.get(pool)
        return active.operating_point if active is not None else None

    def _quantile(self, runtime: PoolRuntime) -> float:
        """The quantile the pool plans for: its chosen point's, else the configured one."""
        point = self._point(runtime.policy.pool)
        return point.quantile if point is not None else runtime.target_quantile

    def policy_for(self, runtime: PoolRuntime) -> PoolPolicy:
        """The pool's policy as planned: the floor of its chosen point, else the configured."""
        point = self._point(runtime.policy.pool)
        if point is None or point.floor_gpus == runtime.policy.floor_gpus:
            return runtime.policy
        return dataclasses.replace(runtime.policy, floor_gpus=point.floor_gpus)

    def slo_for(self, pool: str) -> SloPolicy:
        """The pool's SLO: following its chosen point (``core.operating_point``), else as set."""
        point = self._point(pool)
        return self.slo if point is None else following_the_point(self.slo, point)

    def effective_budgets(self) -> Budgets:
        """The shared caps; the GPU-hours/day cap follows the chosen points when all have one."""
        return following_the_points(self.budgets, [self._point(r.policy.pool) for r in self.pools])

    def _assumed(self, runtime: PoolRuntime, view: PoolView, now: int) -> PoolSnapshot:
        demand_now = 0.0
        if view.history is not None and view.history.usable.any():
            demand_now = float(view.history.values[np.flatnonzero(view.history.usable)[-1]])
        snapshot = assumed_snapshot(
            pool=runtime.policy.pool,
            demand_gpus=demand_now,
            gpus_per_node=runtime.policy.gpus_per_node,
            limit_gpus=None,
            now=now,
        )
        if runtime.assumed_limit_headroom_gpus is None:
            return snapshot
        limit = snapshot.allocatable_gpus + runtime.assumed_limit_headroom_gpus
        return dataclasses.replace(snapshot, nodepool_limit_gpus=limit)

    def _act(
        self,
        decision: Plan,
        snapshots: Mapping[str, PoolSnapshot] | None,
        now: int,
        errors: list[TickError],
    ) -> ActuationReport | None:
        if self.actuator is None or snapshots is None:
            self._last_waste = {}
            return None
        images = {name: snapshot.recent_images for name, snapshot in snapshots.items()}
        report = self.actuator.apply(commands(decision, images=images), now=now)
        errors.extend(TickError("actuate", pool, m) for pool, m in report.errors.items())
        self._last_waste = dict(report.wasted_gpu_hours)
        return report

    def _record(
        self,
        snapshots: Mapping[str, PoolSnapshot] | None,
        now: int,
        errors: list[TickError],
        *,
        halted: bool,
    ) -> None:
        held = sum(s.billed_gpus for s in snapshots.values()) if snapshots else 0
        if halted and not held:
            return  # halted and holding nothing: no write at all, not even the state
        if snapshots:
            self.state.ledger = record_spend(
                self.state.ledger,
                gpus=held,
                now=now,
                max_step_seconds=self.budgets.commitment_seconds,
            )
        self.state.last_tick = now
        self.state.notice = tuple(self.notice_ledger.outcomes)
        modes = {name: p.budget.mode for name, p in self.state.pools.items()}
        due = self._saved_at is None or now - self._saved_at >= SAVE_EVERY_SECONDS
        if not due and modes == self._saved_modes:
            return
        try:
            self.state_store.save(self.state.to_dict())
            self._saved_at, self._saved_modes = now, modes
        except ConflictError as exc:
            message = f"state changed under us (another leader?): re-reading it: {exc}"
            errors.append(TickError("state", None, message))
            log.error("%s", message)
            self._loaded = False
        except ForecasterError as exc:
            errors.append(TickError("state", None, f"could not save state: {exc}"))
            log.error("could not save state: %s", exc)


def _log_decision(decision: Plan, idle: str) -> None:
    """The tick's line per pool: mode, prewarm and every reason (and why nothing is written)."""
    for pool_plan in decision.pools:
        log.info(
            "pool %s: %s, prewarm %d GPUs (%d placeholders)%s: %s",
            pool_plan.pool,
            pool_plan.mode,
            pool_plan.target_gpus,
            pool_plan.placeholders,
            idle,
            "; ".join(pool_plan.reasons),
        )


_NOT_COMPARED = {"observed_at": 0, "measured_lead": None}


def _same_pool(before: PoolSnapshot, after: PoolSnapshot) -> bool:
    """Whether two observations would plan alike: all fields equal but the time each was made
    and the measured lead (a slow average, picked up by the next plan)."""
    return before.__dict__ | _NOT_COMPARED == after.__dict__ | _NOT_COMPARED


def _no_forecast(runtime: PoolRuntime) -> PoolView:
    """A pool whose forecasting failed: no demand, so the planner prewarms nothing."""
    name = runtime.policy.pool
    return PoolView(name, None, None, None, None, None, (), None, 0, runtime.target_quantile)


def _remember(
    pool_state: PoolState, demand: DemandForecast | None, ahead: int, *, step: int
) -> None:
    """Keep the forecast the plan used, to score it when its target time has data: one per
    new data point of a level forecast, one per ``step`` of a peak forecast (made each tick)."""
    if demand is None or not math.isfinite(demand.upper_gpus):
        return
    origin = demand.data_end
    last = pool_state.pending[-1].origin if pool_state.pending else None
    if last is None or origin >= last + (step if demand.peak else 1):
        pool_state.pending.append(
            PendingForecast(origin, origin + ahead, demand.upper_gpus, demand.peak)
        )


def _readable_sources(snapshots: Mapping[str, PoolSnapshot] | None) -> frozenset[str] | None:
    """The notice sources read without a problem this tick (None: no notice observed - the
    twin - so every item's disappearance is a verdict)."""
    if not isinstance(snapshots, Observation):
        return None
    return frozenset(s.source for s in snapshots.notice if s.installed and not s.problem)


def _as_planned(
    demand: DemandForecast | None,
    snapshot: PoolSnapshot,
    *,
    window_seconds: float,
    distrusted: Mapping[str, str],
) -> DemandForecast | None:
    """The forecast as the plan acts on it (``core.planner.planned_demand``) less the announced
    work it adds: what the error budget judges against the history, which leaves that out."""
    if demand is None:
        return None
    planned = planned_demand(snapshot, demand, window_seconds=window_seconds, distrusted=distrusted)
    known = announced_gpus(snapshot, window_seconds=window_seconds, distrusted=distrusted)
    return dataclasses.replace(demand, upper_gpus=planned - known)


def _score(pool_state: PoolState, series: DemandSeries) -> list[Evaluation]:
    """Evaluate pending forecasts whose target time the data has reached; drop them. A peak
    forecast is judged against the highest demand in (origin, target], a level one at target."""
    evaluations, keep = [], []
    for pending in pool_state.pending:
        if pending.target_time > series.end:
            if series.end - pending.origin < DAY:
                keep.append(pending)
            continue
        index = (pending.target_time - series.start) // series.step_seconds
        first = index
        if pending.peak:
            first = max(0, (pending.origin - series.start) // series.step_seconds + 1)
        if not 0 <= index < len(series):
            continue
        seen = series.values[first : index + 1]
        seen = seen[np.isfinite(seen)]
        if seen.size:
            evaluations.append(
                Evaluation(pending.target_time, float(seen.max()), pending.upper_gpus)
            )
    pool_state.pending = keep
    return evaluations


def _lines(quality: QualityReport) -> tuple[str, ...]:
    return tuple(quality.describe())
