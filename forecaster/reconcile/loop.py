"""One reconcile tick: observe -> forecast -> plan -> act -> record.

``Reconciler.tick(now)`` is the whole daemon step; the scheduler only calls it, and replay ticks
it in simulated time. ``tick`` reads as that data path; each step lives in its own module:

* ``observing`` - the pools' snapshots, the kill switch, the follow-up of announced work;
* ``quiet`` - whether the cluster looks as at the last plan (then the plan stands, nothing is
  written: the loop answers new pods within a tick yet forecasts about once a minute);
* ``forecast`` - the level forecast from history fetched once per ``step_seconds`` (the scrape
  is no fresher), and the peak rise from the pods created lately, at every tick;
* ``scoring`` - the error budget: past forecasts scored, the pool's mode moved on;
* ``operating_points`` - the quantile, floor, SLO and cap a published operating point sets;
* ``acting`` - the plan written, and said; ``persisting`` - the state read and saved;
* ``core.planner.plan`` - the plan, pure; the actuator carries it out.

It never raises for a data, model or cluster problem: each is logged, kept in the
``TickRecord`` and handled the safe way (stale forecasts withdraw after ``hold_seconds``, an
unobservable cluster is not acted on, an unloadable model is replaced by the baseline).

The state (ledger, error budget) is saved every ``SAVE_EVERY_SECONDS`` and at once on a change
of mode: a write per 15 s tick is API load for nothing, and the ledger charges the time since the
last save anyway (up to the placeholder TTL, ``core.budget``).

``scripts/mutation_check.py`` pins exact lines of this module (it breaks them on purpose): a
change to a pinned line updates the mutation's strings there, never drops the mutation.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence

from forecaster.core.actions import ActuationReport, Halt
from forecaster.core.budget import record_spend, spent_last_day
from forecaster.core.cluster import Observation, PoolSnapshot
from forecaster.core.error_budget import ErrorBudgetState, Evaluation, SloPolicy, Transition
from forecaster.core.notice import NoticeLedger, top_namespaces
from forecaster.core.operating_point import OperatingPoint, following_the_points
from forecaster.core.planner import Plan, PoolInput, plan
from forecaster.core.policy import Budgets, PlanningHorizon, PoolPolicy
from forecaster.durations import DAY
from forecaster.reconcile import in_flight_codec, operating_points
from forecaster.reconcile.acting import log_plan, write_plan
from forecaster.reconcile.forecast import History, forecast_pool, no_forecast, with_arrivals
from forecaster.reconcile.observing import (
    HaltReader,
    Observer,
    assumed,
    follow_notice,
    left_out,
    observe_pools,
    read_halt,
)
from forecaster.reconcile.persisting import Saves, UnreadableStateError, read_state, save_state
from forecaster.reconcile.quiet import Now, is_quiet, kept
from forecaster.reconcile.records import (
    Models,
    PoolRuntime,
    PoolTrack,
    PoolView,
    PrewarmActuator,
    TickError,
    TickRecord,
)
from forecaster.reconcile.scoring import advance_budget, as_planned, remember
from forecaster.reconcile.state import ServiceState, StateStore
from forecaster.sources.base import DemandSource

log = logging.getLogger(__name__)
Snapshots = Mapping[str, PoolSnapshot] | None
SAVE_EVERY_SECONDS = 300
"""Persist the state at least this often (and at every change of mode; a replay, never read back,
less): the tallies are 5-minute buckets (``core.budget.BUCKET_SECONDS``), a crash loses ~one."""


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
        save_every_seconds: int = SAVE_EVERY_SECONDS,
    ) -> None:
        self.pools, self.save_every_seconds = list(pools), save_every_seconds
        self.source, self.models = source, models
        self.lookback_seconds = lookback_seconds
        self.budgets = budgets
        self.slo = slo
        self.state_store = state_store
        self.step_seconds = step_seconds
        self.observe, self.actuator, self.read_halt = observe, actuator, halt
        self.state = ServiceState()
        self.notice_ledger = NoticeLedger()
        """Announced items followed to their end: each notice source's precision and waste."""
        self.tracks = {p.policy.pool: PoolTrack() for p in self.pools}  # memory, per pool
        self._loaded = False
        self._saves = Saves()  # when the state was last persisted, each pool's mode in it
        self.last: TickRecord | None = None
        self._planned: TickRecord | None = None  # the last tick that planned (not quiet)

    def tick(self, now: int, *, act: bool = True, not_acting: str | None = None) -> TickRecord:
        # long: the data path of one tick, read top to bottom (each step is a call to its module)
        """One reconcile pass at ``now`` (epoch seconds).

        ``act=False`` (a replica that is not the leader): forecast and plan, write nothing -
        neither to the cluster nor to the persisted state; ``not_acting`` says why on each
        pool's line (e.g. who holds the Lease, until when).
        """
        errors: list[TickError] = []
        self._load_state(errors, now=now)
        snapshots = observe_pools(self.observe, [p.policy.pool for p in self.pools], now, errors)
        halt, readable = read_halt(self.read_halt, errors)
        if not readable:
            snapshots = None  # the kill switch may be on: do not act on a guess
        if act and self._quiet(snapshots, halt, now, errors):
            assert self._planned is not None and snapshots is not None  # checked by ``_quiet``
            self.last = kept(self._planned, snapshots, now, budgets=self._budgets())
            return self.last
        ended = follow_notice(self.notice_ledger, snapshots or {}, now, self._window) if act else ()
        distrusted = left_out(
            self.notice_ledger, snapshots, self.budgets, self.pools, self._window, now=now
        )
        inputs, views, scored, transitions = [], {}, {}, []
        for runtime in self.pools:
            name = runtime.policy.pool
            pool_input, views[name], scored[name], changed = self._pool(
                runtime, snapshots, now, errors, distrusted[name]
            )
            inputs.append(pool_input)
            transitions += changed
        spent = math.inf if not self._loaded else spent_last_day(self.state.ledger)
        decision = plan(
            inputs,
            budgets=self.effective_budgets(),
            spent_gpu_hours_last_day=spent,
            now=now,
            halted=halt.reason if halt else None,
        )
        report = self._act(decision, snapshots, now, errors, halt) if act else None
        if act and self._loaded:
            self._record(snapshots, now, errors, halted=halt is not None)
        if not act:
            self._loaded = False  # a follower re-reads each tick: fresh when it takes over
        log_plan(decision, "" if act else f" [writes nothing: {not_acting or 'not the leader'}]")
        observed = snapshots if isinstance(snapshots, Observation) else Observation()
        self.last = self._planned = TickRecord(
            at=now,
            plan=decision,
            pools=views,
            transitions=tuple(transitions),
            actuation=report,
            errors=tuple(errors),
            halt=halt,
            unattributed=observed.unattributed,
            evaluations=scored,
            skipped=observed.skipped,
            notice=tuple(self.notice_ledger.judged(n, now=now) for n in observed.notice),
            notice_ended=ended,
            budgets=self._budgets(),
            claimed=observed.claimed,
            notice_pools=self.notice_ledger.by_pool(views, now=now),
            notice_namespaces=top_namespaces(self.notice_ledger.outcomes, now=now),
        )
        return self.last

    def _pool(
        self,
        runtime: PoolRuntime,
        snapshots: Mapping[str, PoolSnapshot] | None,
        now: int,
        errors: list[TickError],
        distrusted: Mapping[str, str],
    ) -> tuple[PoolInput, PoolView, tuple[Evaluation, ...], list[tuple[str, Transition]]]:
        """One pool's part of the tick: its horizon, forecast (scored), snapshot and planner
        input, and the mode changes its scores made."""
        name, track = runtime.policy.pool, self.tracks[runtime.policy.pool]
        pool_state = self.state.pool(name)
        horizon = self._horizon(runtime, snapshots)
        evaluations: list[Evaluation] = []
        try:
            if track.fetched is not None and now - track.fetched[0] < self.step_seconds:
                view = track.fetched[1]  # the history is no fresher yet
            else:
                view, evaluations = forecast_pool(
                    runtime,
                    track,
                    pool_state,
                    self._history(),
                    now=now,
                    horizon=horizon,
                    errors=errors,
                )
        except Exception as exc:  # a bug or malformed input harms only this pool
            log.exception("pool %s: forecasting failed; the pool withdraws this tick", name)
            errors.append(TickError("crash", name, f"{type(exc).__name__}: {exc}"))
            view, evaluations = no_forecast(runtime), []
        changed = advance_budget(
            name,
            pool_state,
            evaluations,
            wasted_gpu_hours=track.wasted_gpu_hours,
            slo=self.slo_for(name),
            now=now,
        )
        snapshot = snapshots[name] if snapshots else assumed(runtime, view, now)
        view = with_arrivals(
            runtime, track, view, snapshot, now=now, horizon=horizon, errors=errors
        )
        window = horizon.horizon_seconds
        planned = as_planned(view.demand, snapshot, window_seconds=window, distrusted=distrusted)
        remember(pool_state, planned, window, step=self.step_seconds)
        policy = self.policy_for(runtime)
        view = PoolView(**{**view.__dict__, "snapshot": snapshot, "floor_gpus": policy.floor_gpus})
        pool_input = PoolInput(
            policy,
            snapshot,
            view.demand,
            pool_state.budget.mode,
            window_seconds=window,
            distrusted=distrusted,
        )
        return pool_input, view, tuple(evaluations), changed

    def _horizon(self, runtime: PoolRuntime, snapshots: Snapshots) -> PlanningHorizon:
        """How far ahead the pool plans now: its lead as measured, said when it moves."""
        name, track = runtime.policy.pool, self.tracks[runtime.policy.pool]
        measured = snapshots[name].measured_lead if snapshots and name in snapshots else None
        horizon = runtime.horizon(measured)
        if track.horizon_seconds not in (None, horizon.horizon_seconds):
            log.warning(
                "pool %s: forecasting %d s ahead now (%s)",
                name,
                horizon.horizon_seconds,
                horizon.reason,
            )
        track.horizon_seconds = horizon.horizon_seconds
        return horizon

    def _quiet(
        self,
        snapshots: Mapping[str, PoolSnapshot] | None,
        halt: Halt | None,
        now: int,
        errors: list[TickError],
    ) -> bool:
        """Whether the last plan stands (``reconcile.quiet``); never before the state is read."""
        return self._loaded and is_quiet(
            self._planned,
            Now(now, snapshots, halt, bool(errors)),
            pools=[p.policy.pool for p in self.pools],
            step_seconds=self.step_seconds,
            mode_of=lambda name: self.state.pool(name).budget.mode,
            window_of=self._window,
        )

    def _budgets(self) -> dict[str, ErrorBudgetState]:
        return {p.policy.pool: self.state.pool(p.policy.pool).budget for p in self.pools}

    def _history(self) -> History:
        return History(self.source, self.models, self.lookback_seconds, self.step_seconds)

    def _window(self, pool: str) -> int:
        """The horizon the pool last planned for; before its first plan, the configured one."""
        runtime = next(r for r in self.pools if r.policy.pool == pool)
        return self.tracks[pool].horizon_seconds or runtime.horizon(None).horizon_seconds

    # ---- the operating point chosen at the last retrain (``reconcile.operating_points``) -----
    def policy_for(self, runtime: PoolRuntime) -> PoolPolicy:
        """The pool's policy as planned: the floor of its chosen point, else the configured."""
        return operating_points.policy_for(runtime, self._point(runtime.policy.pool))

    def slo_for(self, pool: str) -> SloPolicy:
        """The pool's SLO: following its chosen point (``core.operating_point``), else as set."""
        return operating_points.slo_for(self.slo, self._point(pool))

    def effective_budgets(self) -> Budgets:
        """The shared caps; the GPU-hours/day cap follows the chosen points when all have one."""
        return following_the_points(self.budgets, [self._point(r.policy.pool) for r in self.pools])

    def _point(self, pool: str) -> OperatingPoint | None:
        return operating_points.point_of(self.tracks.get(pool))

    # ---- the state: read once, charged and saved each acting tick ---------------------------
    def _load_state(self, errors: list[TickError], *, now: int) -> None:
        if self._loaded:
            return
        try:
            saved = read_state(self.state_store, errors, now=now)
        except UnreadableStateError:
            return  # fail closed: never "start from zero" on a damaged, newer or lost state
        self._saves = Saves()  # the next record saves: what was read is all the store has
        if saved is not None:
            self.state = saved
            self.notice_ledger.restore(saved.notice, saved.notice_in_flight, saved.notice_use)
        self._loaded = True

    def _act(
        self,
        decision: Plan,
        snapshots: Mapping[str, PoolSnapshot] | None,
        now: int,
        errors: list[TickError],
        halt: Halt | None,
    ) -> ActuationReport | None:
        """The plan written (``reconcile.acting``: blind only to withdraw on the kill switch)."""
        report = write_plan(self.actuator, decision, snapshots, now=now, halt=halt, errors=errors)
        for name, track in self.tracks.items():  # the error budget charges it next tick
            track.wasted_gpu_hours = report.wasted_gpu_hours.get(name, 0.0) if report else 0.0
        return report

    def _record(
        self, snapshots: Snapshots, now: int, errors: list[TickError], *, halted: bool
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
        notice = in_flight_codec.fit(self.notice_ledger, now=now)  # within its ConfigMap share
        self.state.notice, self.state.notice_in_flight, self.state.notice_use = notice
        every = self.save_every_seconds
        if not save_state(self.state_store, self.state, self._saves, errors, now=now, every=every):
            self._loaded = False  # changed under us: re-read before acting again
