"""The error budget's side of a tick: keep the forecast a plan used, score it when its target
time has data, and move the pool's budget on by the scores (``core.error_budget``).

``scripts/mutation_check.py`` pins exact lines of this module: a change to a pinned line updates
the mutation's strings there, never drops the mutation.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping

import numpy as np

from forecaster.core.cluster import DemandForecast, PoolSnapshot
from forecaster.core.error_budget import Evaluation, SloPolicy, Transition, advance
from forecaster.core.planner import announced_gpus, planned_demand
from forecaster.core.series import DemandSeries
from forecaster.durations import DAY
from forecaster.reconcile.state import PendingForecast, PoolState

log = logging.getLogger("forecaster.reconcile.loop")  # the tick's lines, under one logger


def advance_budget(
    name: str,
    pool_state: PoolState,
    evaluations: list[Evaluation],
    *,
    wasted_gpu_hours: float,
    slo: SloPolicy,
    now: int,
) -> list[tuple[str, Transition]]:
    """Move the pool's error budget on by this tick's scores; log each mode change."""
    before = len(pool_state.budget.transitions)
    pool_state.budget = advance(
        pool_state.budget,
        evaluations=evaluations,
        wasted_gpu_hours=wasted_gpu_hours,
        policy=slo,
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


def remember(
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


def as_planned(
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


def score(pool_state: PoolState, series: DemandSeries) -> list[Evaluation]:
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
