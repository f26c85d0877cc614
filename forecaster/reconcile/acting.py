"""The tick's writes: the plan carried out through the actuator.

A cluster that cannot be observed is not acted on (placeholders and buffers expire by
themselves) - except to withdraw: with the kill switch on, every pool's prewarm is withdrawn
and its NodePool restored even when this tick could not observe the cluster, since withdrawing
needs no snapshot (our objects are found by label and our NodePool record). A kill switch that
cannot be read is never guessed at: nothing is written.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from forecaster.core.actions import ActuationReport, Halt, commands
from forecaster.core.cluster import PoolSnapshot
from forecaster.core.planner import Plan
from forecaster.reconcile.records import PrewarmActuator, TickError

log = logging.getLogger("forecaster.reconcile.loop")  # the tick's lines, under one logger


def write_plan(
    actuator: PrewarmActuator | None,
    decision: Plan,
    snapshots: Mapping[str, PoolSnapshot] | None,
    *,
    now: int,
    halt: Halt | None,
    errors: list[TickError],
) -> ActuationReport | None:
    """Carry out ``decision`` (None: nothing was written); each pool's failure is a tick
    error of that pool."""
    if actuator is None or (snapshots is None and halt is None):
        return None
    images = {name: snapshot.recent_images for name, snapshot in (snapshots or {}).items()}
    report = actuator.apply(commands(decision, images=images), now=now)
    errors.extend(TickError("actuate", pool, m) for pool, m in report.errors.items())
    return report


def log_plan(decision: Plan, idle: str) -> None:
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
