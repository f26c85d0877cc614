"""The tick's reading of the cluster: the pools' snapshots, the kill switch, and the notice
ledger's follow-up of announced work. A cluster that cannot be observed, or a kill switch that
cannot be read, is not acted on (placeholders expire by themselves); each problem is appended to
the tick's errors, never raised.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from forecaster.core.actions import Halt
from forecaster.core.cluster import Observation, PoolSnapshot, assumed_snapshot
from forecaster.core.notice import NoticeLedger, Outcome, due_items, over_gpu_share
from forecaster.core.policy import Budgets
from forecaster.errors import ForecasterError
from forecaster.reconcile.records import PoolRuntime, PoolView, TickError

log = logging.getLogger("forecaster.reconcile.loop")  # the tick's lines, under one logger
Observer = Callable[[Sequence[str], int], Mapping[str, PoolSnapshot]]
HaltReader = Callable[[], Halt | None]
"""Reads the on-call kill switch (``actuators.control``); raises ``ForecasterError`` if it can't."""


def observe_pools(
    observe: Observer | None, names: Sequence[str], now: int, errors: list[TickError]
) -> Mapping[str, PoolSnapshot] | None:
    """Each pool's snapshot (None: no cluster, or it could not be observed)."""
    if observe is None:
        return None
    try:
        snapshots = observe(names, now)
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


def read_halt(reader: HaltReader | None, errors: list[TickError]) -> tuple[Halt | None, bool]:
    """The kill switch, and whether it could be read at all."""
    if reader is None:
        return None, True
    try:
        halt = reader()
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


def left_out(
    ledger: NoticeLedger,
    snapshots: Mapping[str, PoolSnapshot] | None,
    budgets: Budgets,
    pools: Sequence[PoolRuntime],
    window_of: Callable[[str], int],
    *,
    now: int,
) -> dict[str, dict[str, str]]:
    """Per pool, the announced work the plan leaves out now, with why: by trust key, the
    sources and namespaces not trusted (their items did not come) or whose notice is over its
    share of the day's GPU-hours; by item key, a namespace's items due at once past its share
    of the pool's and of the total prewarm GPUs (``core.notice.over_gpu_share``; due within the
    horizon each pool last planned for)."""
    cut = {**ledger.over_share(now=now, limit=budgets.notice_namespace_gpu_hours)}
    cut.update(ledger.distrusted(now=now))
    names = [p.policy.pool for p in pools]
    due = {
        name: due_items(snap.announced, snap.observed_at, within_seconds=window_of(name))
        for name, snap in (snapshots or {}).items()
        if name in names
    }
    over = over_gpu_share(
        due,
        {p.policy.pool: p.policy.max_prewarm_gpus for p in pools},
        share=budgets.notice_namespace_gpu_share,
        total_gpus=budgets.max_total_prewarm_gpus,
        left_out=cut,
    )
    return {name: {**cut, **over.get(name, {})} for name in names}


def follow_notice(
    ledger: NoticeLedger,
    snapshots: Mapping[str, PoolSnapshot],
    now: int,
    window_of: Callable[[str], int],
) -> tuple[Outcome, ...]:
    """Record this reading's announced items - each judged by its pods where the cluster's pods
    are known - and the GPUs their pods run (``NoticeLedger.use``); log the ones that did not
    come; return every item that ended, and leave out of ``snapshots`` (in place) the items that
    ended but are still listed. The leader only: a follower's verdicts would repeat the
    leader's."""
    readable = _readable_sources(snapshots)
    observed = isinstance(snapshots, Observation)  # pods known (not the twin)
    statuses = snapshots.notice if isinstance(snapshots, Observation) else ()
    marking = frozenset(s.source for s in statuses if s.marks_pods)
    ended: list[Outcome] = []
    for name, snapshot in snapshots.items():
        for outcome in ledger.observe(
            name,
            snapshot.announced,
            readable=readable,
            now=now,
            window_seconds=window_of(name),
            present=frozenset(snapshot.announced_present) if observed else None,
            marking=marking,
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
        if snapshot.problem is None:  # an unobservable pool's zeros are not its use
            ledger.use.record(
                name,
                running_gpus=snapshot.running_gpus,
                announced=snapshot.announced_running,
                now=now,
            )
    if isinstance(snapshots, Observation):
        _leave_out_ended(ledger, snapshots)
    return tuple(ended)


def _leave_out_ended(ledger: NoticeLedger, snapshots: Observation) -> None:
    """Each pool's announced items less those that ended (came, or were withdrawn) and that
    their source still lists: not planned again (``NoticeLedger.ended``)."""
    for name, snapshot in list(snapshots.items()):
        kept = tuple(i for i in snapshot.announced if not ledger.ended(name, i.key))
        if len(kept) != len(snapshot.announced):
            snapshots[name] = dataclasses.replace(snapshot, announced=kept)


def _readable_sources(snapshots: Mapping[str, PoolSnapshot] | None) -> frozenset[str] | None:
    """The notice sources read without a problem this tick (None: no notice observed - the
    twin - so every item's disappearance is a verdict)."""
    if not isinstance(snapshots, Observation):
        return None
    return frozenset(s.source for s in snapshots.notice if s.installed and not s.problem)


def assumed(runtime: PoolRuntime, view: PoolView, now: int) -> PoolSnapshot:
    """With no cluster to observe (the what-if): the pool as its last demand implies."""
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
