"""Prometheus metrics of the daemon (prometheus-client, Prometheus naming conventions).

All series live in one ``CollectorRegistry`` per daemon (no global state), exported at
``/metrics``. Gauges are set from each tick's record; counters only grow.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from forecaster.core.cluster import PoolSnapshot
from forecaster.core.error_budget import (
    SloPolicy,
    budget_remaining,
    waste_last_day,
)
from forecaster.core.finops import PoolSpend
from forecaster.core.notice_use import KINDS
from forecaster.core.planner import Mode
from forecaster.reconcile.records import TickRecord


class Metrics:
    """The daemon's metric families."""

    def __init__(self) -> None:
        """Declare every series, on a registry of its own (one per daemon)."""
        # long: metric declarations, one per exported series
        self.registry = CollectorRegistry()
        r = self.registry
        self.forecast = Gauge(
            "forecaster_forecast_gpus",
            "Forecast GPUs requested at a horizon",
            ["pool", "quantile", "horizon_seconds"],
            registry=r,
        )
        self.observed_demand = Gauge(
            "forecaster_observed_demand_gpus",
            "GPUs requested by real Pending + Running pods of the pool as the daemon observes"
            " them (our placeholders excluded, node affinity attributed): the demand history"
            " the default query reads once it exists",
            ["pool"],
            registry=r,
        )
        self.observed_unannounced = Gauge(
            "forecaster_observed_unannounced_demand_gpus",
            "Of forecaster_observed_demand_gpus, the GPUs of pods not of announced work (not a"
            " CronJob's run or a JobSet's waiting stage): the history the default query reads,"
            " so the forecast is of unannounced work and announced work is planned once",
            ["pool"],
            registry=r,
        )
        self.arrived = Counter(
            "forecaster_arrived_gpus",
            "GPUs requested by real pods of the pool created, each counted once by the tick"
            " that first sees it (our placeholders excluded; a pod that ends between two ticks"
            " is not seen)",
            ["pool"],
            registry=r,
        )
        self._counted: dict[str, dict[str, None]] = {}  # pool -> pods counted in the last hour
        self.prewarm = Gauge(
            "forecaster_prewarm_target_gpus", "Prewarm GPUs planned", ["pool"], registry=r
        )
        self.needed = Gauge(
            "forecaster_prewarm_needed_gpus",
            "Prewarm GPUs needed before caps",
            ["pool"],
            registry=r,
        )
        self.handoff = Gauge(
            "forecaster_handoff_active",
            "1 while the pool is handed off to reactive scaling",
            ["pool"],
            registry=r,
        )
        self.budget = Gauge(
            "forecaster_error_budget_remaining_ratio",
            "Share of the forecast SLO error budget left (1 untouched, <= 0 spent)",
            ["pool"],
            registry=r,
        )
        self.waste = Gauge(
            "forecaster_waste_gpu_hours",
            "Prewarmed GPU-hours that expired unused in 24 h",
            ["pool"],
            registry=r,
        )
        self.cost = Gauge(
            "forecaster_prewarm_cost_per_hour", "Cost per hour of the planned prewarm", registry=r
        )
        self.spent = Gauge(
            "forecaster_prewarm_gpu_hours_last_day", "Prewarm GPU-hours spent in 24 h", registry=r
        )
        self.plan_quantile = Gauge(
            "forecaster_plan_quantile",
            "The forecast quantile the pool plans for (chosen at the last retrain with a budget)",
            ["pool"],
            registry=r,
        )
        self.plan_floor = Gauge(
            "forecaster_plan_floor_gpus",
            "GPUs the pool keeps warm whatever the forecast (its floor, or its operating point's)",
            ["pool"],
            registry=r,
        )
        self.kueue_room = Gauge(
            "forecaster_kueue_admissible_gpus",
            "GPUs Kueue's quota could still admit onto the pool (Kueue-gated pools)",
            ["pool"],
            registry=r,
        )
        self.kueue_wait = Gauge(
            "forecaster_kueue_admission_wait_p95_seconds",
            "P95 of workload creation to Admitted, per ClusterQueue",
            ["cluster_queue"],
            registry=r,
        )
        self.kueue_timeouts = Gauge(
            "forecaster_kueue_pods_ready_timeout_evictions",
            "Workloads evicted for PodsReadyTimeout, per ClusterQueue",
            ["cluster_queue"],
            registry=r,
        )
        self.leader = Gauge("forecaster_leader", "1 when this replica is the leader", registry=r)
        self.launch_failed = Gauge(
            "forecaster_launch_failing",
            "1 while Karpenter recently failed to launch the pool's nodes (no capacity)",
            ["pool"],
            registry=r,
        )
        self.ready = Gauge(
            "forecaster_prewarm_ready_gpus",
            "Prewarm GPUs that are warm: our placeholders on Ready nodes",
            ["pool"],
            registry=r,
        )
        self.unattributed = Gauge(
            "forecaster_unattributed_pending_gpus",
            "GPUs of pending pods no NodePool can serve, per namespace",
            ["namespace"],
            registry=r,
        )
        self.skipped = Gauge(
            "forecaster_skipped_objects",
            "Pods and notice objects other teams wrote that the last observation passed over, by"
            " kind and reason (exceeds-node: more per pod than one node of its pool holds, never"
            " placeable; unreadable): each costs itself only",
            ["kind", "reason"],
            registry=r,
        )
        self.claimed = Gauge(
            "forecaster_dra_claim_pods",
            "Live pods asking for devices through DRA claims (not prewarmed: Karpenter does not"
            " provision for them), per namespace and pool (none: no NodePool fits)",
            ["namespace", "pool"],
            registry=r,
        )
        self.notice_installed = Gauge(
            "forecaster_notice_source_installed",
            "1 when the cluster serves the notice source's API (0: not installed)",
            ["source"],
            registry=r,
        )
        self.notice_precision = Gauge(
            "forecaster_notice_precision",
            "Share of the source's announced items resolved in 7 days that came (absent: none)",
            ["source"],
            registry=r,
        )
        self.notice_trusted = Gauge(
            "forecaster_notice_source_trusted",
            "0 while the source's announced items are not planned (precision below 0.5), or those"
            " of one of its namespaces (forecaster_notice_distrusted_namespaces)",
            ["source"],
            registry=r,
        )
        self.notice_cut = Gauge(
            "forecaster_notice_distrusted_namespaces",
            "Namespaces whose items of the source are not planned (their own precision below"
            " 0.5 for a day); the source's other namespaces stay trusted",
            ["source"],
            registry=r,
        )
        self.notice_dropped = Gauge(
            "forecaster_notice_dropped_items",
            "The source's announced items withdrawn unjudged since start because too many were"
            " in flight (10,000, or the state's bytes): each charged as not come",
            ["source"],
            registry=r,
        )
        self.notice_waste = Gauge(
            "forecaster_notice_waste_gpu_hours",
            "GPU-hours held in 7 days for the source's announced items that did not come",
            ["source"],
            registry=r,
        )
        self.announced = Gauge(
            "forecaster_notice_announced_gpus",
            "GPUs of work announced for the pool whose pods do not exist yet, per source",
            ["pool", "source"],
            registry=r,
        )
        self.notice_came = Counter(
            "forecaster_notice_came_gpus",
            'GPUs of announced items that came, per pool and source; ahead="true": announced'
            " at least the pool's prewarm window before (divided by forecaster_arrived_gpus_total:"
            " the share of new GPU work that came with notice enough to be warm)",
            ["pool", "source", "ahead"],
            registry=r,
        )
        self.notice_held = Counter(
            "forecaster_notice_held_gpu_hours",
            "Prewarm GPU-hours held for announced items while none of their pods existed, from"
            ' when each became due to its coming (came="true": the cost of acting on notice) or'
            ' to its latest start (came="false": the source\'s waste), per pool and source',
            ["pool", "source", "came"],
            registry=r,
        )
        self.notice_lead = Histogram(
            "forecaster_notice_lead_seconds",
            "Notice an announced item gave: from its first reading to its coming",
            ["pool", "source"],
            buckets=(60, 180, 300, 600, 900, 1800, 3600, 4 * 3600, 86400, 7 * 86400),
            registry=r,
        )
        self.notice_gpu_hours = Gauge(
            "forecaster_notice_gpu_hours_7d",
            "GPU-hours the pods of a source's announced work ran on the pool in 7 days, by the"
            " notice their item gave: ahead (>= the pool's lead time), short, unmeasured",
            ["pool", "source", "notice"],
            registry=r,
        )
        self.notice_share = Gauge(
            "forecaster_notice_ahead_share_7d",
            "Share of the pool's GPU-hours of 7 days that came announced by the source at least"
            " the pool's lead time ahead (absent: the pool ran nothing)",
            ["pool", "source"],
            registry=r,
        )
        self.notice_pool_precision = Gauge(
            "forecaster_notice_pool_precision_7d",
            "Share of the source's items on the pool resolved in 7 days that came",
            ["pool", "source"],
            registry=r,
        )
        self.lead = Gauge(
            "forecaster_lead_measured_seconds",
            "What launches of the last day took per pool (median): part provisioning (node"
            " created -> Ready) or startup (pod scheduled -> containers ready on a fresh node)",
            ["pool", "part"],
            registry=r,
        )
        self.spend_gpu_hours = Gauge(
            "forecaster_gpu_hours_24h",
            "GPU-hours of the last day per pool: kind nodes (billed), used (real pods), prewarm,"
            " prewarm_wasted (ended unused)",
            ["pool", "kind"],
            registry=r,
        )
        self.spend_dollars = Gauge(
            "forecaster_prewarm_cost_dollars_24h",
            "Prewarm dollars of the last day per pool: kind used (taken by real pods) or wasted",
            ["pool", "kind"],
            registry=r,
        )
        self.cost_per_used = Gauge(
            "forecaster_cost_per_used_gpu_hour_dollars",
            "Node dollars per GPU-hour real pods used, over the last day",
            ["pool"],
            registry=r,
        )
        self.wait_removed = Gauge(
            "forecaster_wait_removed_gpu_minutes_24h",
            "Estimate: GPUs of prewarm real pods took x the lead time each was spared",
            ["pool"],
            registry=r,
        )
        self.halted = Gauge(
            "forecaster_halted", "1 while the on-call kill switch is on (no prewarm)", registry=r
        )
        self.duration = Histogram(
            "forecaster_reconcile_duration_seconds",
            "Reconcile tick duration",
            registry=r,
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.ticks = Counter("forecaster_reconcile_total", "Reconcile ticks run", registry=r)
        self.errors = Counter(
            "forecaster_reconcile_errors_total",
            "Errors met in reconcile ticks",
            ["kind"],
            registry=r,
        )
        self.last_tick = Gauge(
            "forecaster_last_reconcile_timestamp_seconds", "Time of the last tick", registry=r
        )

    def observe_spend(self, spend: Mapping[str, PoolSpend]) -> None:
        """Set the FinOps gauges (``core.finops``) after a tick."""
        for pool, s in spend.items():
            for kind, hours in (
                ("nodes", s.node_gpu_hours),
                ("used", s.used_gpu_hours),
                ("prewarm", s.prewarm_gpu_hours),
                ("prewarm_wasted", s.wasted_gpu_hours),
            ):
                self.spend_gpu_hours.labels(pool=pool, kind=kind).set(hours)
            self.spend_dollars.labels(pool=pool, kind="used").set(s.used_prewarm_cost)
            self.spend_dollars.labels(pool=pool, kind="wasted").set(s.wasted_cost)
            if s.cost_per_used_gpu_hour is not None:
                self.cost_per_used.labels(pool=pool).set(s.cost_per_used_gpu_hour)
            self.wait_removed.labels(pool=pool).set(s.wait_removed_gpu_minutes)

    def _observe_snapshot(self, snapshot: PoolSnapshot) -> None:
        name = snapshot.pool
        if snapshot.problem is None:
            self.observed_demand.labels(pool=name).set(snapshot.real_demand_gpus)
            self.observed_unannounced.labels(pool=name).set(
                snapshot.real_demand_gpus - snapshot.announced_real_gpus
            )
        if snapshot.arrivals is not None:
            self._count_arrivals(name, snapshot.arrivals.pods)
        self.launch_failed.labels(pool=name).set(1 if snapshot.launch_problem else 0)
        if snapshot.ready_placeholder_gpus is not None:
            self.ready.labels(pool=name).set(snapshot.ready_placeholder_gpus)
        lead = snapshot.measured_lead
        if lead is not None:
            self.lead.labels(pool=name, part="provisioning").set(lead.provisioning_seconds)
            if lead.startup_seconds is not None:
                self.lead.labels(pool=name, part="startup").set(lead.startup_seconds)

    def _notice(self, record: TickRecord) -> None:
        """Each notice source's state and each pool's announced GPUs, as of this tick."""
        self.notice_precision.clear()
        for status in record.notice:
            self.notice_installed.labels(source=status.source).set(int(status.installed))
            self.notice_waste.labels(source=status.source).set(status.waste_gpu_hours)
            whole = status.trusted and not status.distrusted_namespaces
            self.notice_trusted.labels(source=status.source).set(int(whole))
            self.notice_cut.labels(source=status.source).set(len(status.distrusted_namespaces))
            self.notice_dropped.labels(source=status.source).set(status.dropped)
            if status.precision is not None:
                self.notice_precision.labels(source=status.source).set(status.precision)
        self.announced.clear()
        for name, view in record.pools.items():
            totals: dict[str, int] = {}
            for item in view.snapshot.announced if view.snapshot else ():
                totals[item.source] = totals.get(item.source, 0) + item.gpus
            for source, gpus in totals.items():
                self.announced.labels(pool=name, source=source).set(gpus)
        for ended in record.notice_ended:
            self.notice_held.labels(
                pool=ended.pool, source=ended.source, came=str(ended.came).lower()
            ).inc(ended.held_gpu_hours)
            if ended.came:
                ahead = "true" if ended.ahead else "false"
                self.notice_came.labels(pool=ended.pool, source=ended.source, ahead=ahead).inc(
                    ended.gpus
                )
                self.notice_lead.labels(pool=ended.pool, source=ended.source).observe(
                    ended.notice_seconds
                )
        self._notice_pools(record)

    def _notice_pools(self, record: TickRecord) -> None:
        """Each pool's announced work per source over 7 days (``core.notice_use``)."""
        for gauge in (self.notice_gpu_hours, self.notice_share, self.notice_pool_precision):
            gauge.clear()
        for n in record.notice_pools:
            for kind in KINDS:
                self.notice_gpu_hours.labels(pool=n.pool, source=n.source, notice=kind).set(
                    n.gpu_hours.get(kind, 0.0)
                )
            if n.ahead_share is not None:
                self.notice_share.labels(pool=n.pool, source=n.source).set(n.ahead_share)
            if n.precision is not None:
                self.notice_pool_precision.labels(pool=n.pool, source=n.source).set(n.precision)

    def _count_arrivals(self, pool: str, pods: tuple[tuple[str, int], ...]) -> None:
        """Add the GPUs of pods not counted before; forget pods that left the hour's window
        (they cannot come back: a pod's creation time never changes). The first observation
        only learns what exists: pods created before this replica started are not its arrivals
        (a restart would count the last hour again)."""
        counted = self._counted.get(pool)
        fresh = 0 if counted is None else sum(g for uid, g in pods if uid not in counted)
        self.arrived.labels(pool=pool).inc(fresh)
        self._counted[pool] = dict.fromkeys(uid for uid, _ in pods)

    def _passed_over(self, record: TickRecord) -> None:
        """What the tick's observation saw and plans nothing for: pending pods no NodePool
        serves, objects skipped as unreadable or unplaceable, pods asking through DRA claims."""
        self.unattributed.clear()
        for lost in record.unattributed:
            self.unattributed.labels(namespace=lost.namespace).set(lost.gpus)
        self.skipped.clear()
        for (kind, reason), count in Tally((s.kind, s.reason) for s in record.skipped).items():
            self.skipped.labels(kind=kind, reason=reason).set(count)
        self.claimed.clear()
        for claimed in record.claimed:
            self.claimed.labels(namespace=claimed.namespace, pool=claimed.pool or "").set(
                claimed.pods
            )

    def observe_tick(
        self,
        record: TickRecord,
        *,
        slo_for: Callable[[str], SloPolicy],
        seconds: float,
    ) -> None:
        """Set every gauge from one tick (``slo_for``: each pool's SLO, ``Reconciler.slo_for``)."""
        self.ticks.inc()
        self.duration.observe(seconds)
        self.last_tick.set(record.at)
        self.halted.set(1 if record.halt else 0)
        self._passed_over(record)
        self._notice(record)
        for error in record.errors:
            self.errors.labels(kind=error.kind).inc()
        self.cost.set(record.plan.cost_per_hour)
        self.spent.set(record.plan.gpu_hours_spent_last_day)
        for pool_plan in record.plan.pools:
            name = pool_plan.pool
            self.prewarm.labels(pool=name).set(pool_plan.target_gpus)
            self.needed.labels(pool=name).set(pool_plan.needed_gpus)
            self.handoff.labels(pool=name).set(
                1 if pool_plan.mode in (Mode.HANDED_OFF, Mode.RECOVERING) else 0
            )
            budget = record.budget(name)
            self.budget.labels(pool=name).set(
                budget_remaining(budget, slo_for(name), now=record.at)
            )
            self.waste.labels(pool=name).set(waste_last_day(budget, now=record.at))
            self.plan_quantile.labels(pool=name).set(record.pools[name].quantile)
            self.plan_floor.labels(pool=name).set(record.pools[name].floor_gpus)
            snapshot = record.pools[name].snapshot
            if snapshot is not None:
                self._observe_snapshot(snapshot)
            room = snapshot.kueue if snapshot else None
            if room is not None:
                self.kueue_room.labels(pool=name).set(room.admissible_gpus)
                for health in room.health:
                    self.kueue_timeouts.labels(cluster_queue=health.name).set(
                        health.pods_ready_timeouts
                    )
                    if health.admission_wait_p95_s is not None:
                        self.kueue_wait.labels(cluster_queue=health.name).set(
                            health.admission_wait_p95_s
                        )
            forecast = record.pools[name].forecast
            if forecast is not None:
                for j, horizon in enumerate(forecast.horizons_seconds):
                    for k, q in enumerate(forecast.quantiles):
                        self.forecast.labels(
                            pool=name, quantile=f"{q:g}", horizon_seconds=str(horizon)
                        ).set(float(forecast.values[0, j, k]))
