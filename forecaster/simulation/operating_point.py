"""Choose a pool's operating point by replaying its own recent history through the twin.

At each retrain the training job hands this module the pool's demand history (what it trains
on - data from before the retrain only) and, where the source keeps them, the pool's pods over
it (kube-state-metrics: each pod's creation, GPU requests and lifetime; ``sources.prometheus``).
Without pods the history becomes pods (``core.jobs.jobs_from_series``: each rise submits pods
of up to a node's GPUs, each fall ends the oldest that fit in it). The twin replays them under
the daemon's own loop (``app.replay_policies.replay_policy("predictive")``, retrained weekly
inside the replay on the replayed past only): first reactive scaling alone, whose GPU-hours a
day turn a percentage budget into GPU-hours (the GPU-hours/day cap), then each candidate
(quantile, floor) under that cap and the SLO it implies. The last ``measure_seconds`` of the
history are measured; the earlier part only trains the replay's models. ``core.operating_point``
picks the point. Per quantile the floors are tried from the smallest up, and the larger ones are
skipped once one has spent more than a spend budget (or met a wait target): a larger floor only
costs more, so it could not be chosen.

What the demand level cannot show, and the pods do: job boundaries (a rise of 8 GPUs in a
minute is one 8-GPU pod, a rise of 3 one 3-GPU pod, whatever the jobs were; no job spans
nodes) and waits that were already in the demand (pending pods count as demand). Neither shows
a job's pods as one gang. The choice is relative - the same replay judges every candidate.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from forecaster.core.jobs import JobTrace, jobs_from_series
from forecaster.core.operating_point import (
    Budget,
    Candidate,
    OperatingPoint,
    larger_floor_worth_trying,
    operating_point,
    point_label,
    slo_at,
)
from forecaster.core.series import DemandSeries
from forecaster.durations import DAY
from forecaster.errors import ForecasterError
from forecaster.simulation.frontier import PolicyFactory
from forecaster.simulation.metrics import ReplayMetrics, as_candidate
from forecaster.simulation.replay import ReplaySetup, RetrainSchedule, replay

log = logging.getLogger(__name__)
SIMULATED_LOGGERS = ("forecaster.reconcile", "forecaster.simulation.replay")


def choose_operating_point(
    history: DemandSeries,
    setup: ReplaySetup,
    *,
    make_policy: PolicyFactory,
    quantiles: Sequence[float],
    budget: Budget,
    measure_seconds: int,
    floors_gpus: Sequence[int] = (0,),
    pods: JobTrace | None = None,
    demand_pod_gpus: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> OperatingPoint | None:
    """Replay the pool's ``pods`` over ``history``'s window (without them, ``history`` rebuilt
    as pods of ``demand_pod_gpus``, whole nodes by default and at most) at each of
    ``quantiles`` with each of ``floors_gpus`` and choose for ``budget`` (module docstring);
    None when the history is too short or reactive used no GPU-hours."""
    end = history.end + history.step_seconds
    warmup_end = end - measure_seconds
    if warmup_end - history.start < DAY:
        log.warning(
            "pool %s: %.1f days of history leave no day to train the replays before the %.1f"
            " measured: no operating point",
            history.name,
            (end - history.start) / DAY,
            measure_seconds / DAY,
        )
        return None
    jobs = _jobs(history, setup, pods=pods, demand_pod_gpus=demand_pod_gpus)
    base = _measured(setup, start=history.start, warmup_end=warmup_end, end=end)
    run = _runner(jobs, make_policy, progress)
    reactive = run("reactive", base)
    if reactive.gpu_hours <= 0:
        log.warning(
            "pool %s: no GPU-hours in the measured history: no operating point", history.name
        )
        return None
    days = measure_seconds / DAY
    ceiling = setup.budgets.max_prewarm_gpu_hours_per_day
    cap = budget.gpu_hours_per_day(reactive.gpu_hours / days, ceiling=ceiling)
    candidates = _candidates(
        base,
        run,
        name=history.name,
        quantiles=quantiles,
        floors_gpus=floors_gpus,
        cap=cap,
        budget_percent=100 * cap / (reactive.gpu_hours / days),
        reactive_gpu_hours=reactive.gpu_hours,
        p95_wait_s=budget.p95_wait_s,
    )
    return operating_point(
        candidates,
        reactive_gpu_hours=reactive.gpu_hours,
        budget=budget,
        window=(warmup_end, end),
        ceiling_gpu_hours_per_day=ceiling,
        replayed="demand" if pods is None else "pods",
    )


def _candidates(
    base: ReplaySetup,
    run: Callable[[str, ReplaySetup], ReplayMetrics],
    *,
    name: str,
    quantiles: Sequence[float],
    floors_gpus: Sequence[int],
    cap: float,
    budget_percent: float,
    reactive_gpu_hours: float,
    p95_wait_s: float | None,
) -> list[Candidate]:
    """Each quantile replayed at each floor under the GPU-hours ``cap``, smallest floor first;
    a quantile's larger floors are not tried once one is not worth it; a replay that fails is
    said and is no candidate."""
    candidates = []
    for q in quantiles:
        for floor in sorted(set(floors_gpus)):
            which = under_budget(base, quantile=q, floor_gpus=floor, gpu_hours_per_day=cap)
            try:
                candidates.append(as_candidate(q, run("predictive", which), floor_gpus=floor))
            except ForecasterError as exc:
                log.warning(
                    "pool %s: replay at %s failed (%s): not a candidate",
                    name,
                    point_label(q, floor),
                    exc,
                )
                continue
            if not larger_floor_worth_trying(
                candidates[-1],
                reactive_gpu_hours=reactive_gpu_hours,
                budget_percent=budget_percent,
                p95_wait_s=p95_wait_s,
            ):
                break
    return candidates


@contextmanager
def _simulated_time_quiet() -> Iterator[None]:
    """Silence the loop's and the replay's own logs while replaying: their hand-offs and
    retrains happen in simulated time, and in the training job's log they would read as
    events of the live cluster. Each module's logger is set, not only the package's: a level
    set on a module's logger (``replay`` sets the loop's) would let its records through."""
    known = list(logging.root.manager.loggerDict)
    loggers = [
        logging.getLogger(name)
        for name in sorted({*SIMULATED_LOGGERS, *known})
        if name.startswith(SIMULATED_LOGGERS)
    ]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _runner(
    jobs: JobTrace, make_policy: PolicyFactory, progress: Callable[[str], None] | None
) -> Callable[[str, ReplaySetup], ReplayMetrics]:
    """Replays ``jobs`` under a named policy and setup, quietly, saying which on ``progress``."""

    def run(name: str, which: ReplaySetup) -> ReplayMetrics:
        if progress is not None:
            label = point_label(which.plan_quantile, which.floor_gpus)
            progress(f"{name} {label}" if name == "predictive" else name)
        with _simulated_time_quiet():
            return replay(jobs, make_policy(name, which, jobs=jobs), setup=which).metrics

    return run


def _jobs(
    history: DemandSeries, setup: ReplaySetup, *, pods: JobTrace | None, demand_pod_gpus: int | None
) -> JobTrace:
    """The pool's pods over the history's window; without them, the history rebuilt as pods of
    ``demand_pod_gpus`` (whole nodes by default, and at most)."""
    end = history.end + history.step_seconds
    if pods is not None:
        return pods.seen_between(history.start, end)
    per_node = setup.twin.gpus_per_node
    return jobs_from_series(
        history.start,
        history.step_seconds,
        values=history.values,
        max_pod_gpus=min(demand_pod_gpus or per_node, per_node),
    )


def _measured(setup: ReplaySetup, *, start: int, warmup_end: int, end: int) -> ReplaySetup:
    """``setup`` over the history: warmed up to ``warmup_end``, measured to ``end``, retrained
    weekly (or as often as the warm-up allows) on everything before."""
    warmup = warmup_end - start
    return dataclasses.replace(
        setup,
        start=start,
        warmup_end=warmup_end,
        end=end,
        retrain=RetrainSchedule(
            train_seconds=warmup + (end - warmup_end),
            min_train_seconds=min(7 * DAY, warmup),
            every_seconds=min(7 * DAY, warmup),
        ),
    )


def under_budget(
    setup: ReplaySetup, *, quantile: float, gpu_hours_per_day: float, floor_gpus: int = 0
) -> ReplaySetup:
    """``setup`` as the daemon runs at ``quantile`` above ``floor_gpus`` under a GPU-hours/day
    budget: the point planned for, the cap is the budget, and the SLO follows
    (``core.operating_point``)."""
    setup = setup.at_point(quantile, floor_gpus)
    budgets = dataclasses.replace(setup.budgets, max_prewarm_gpu_hours_per_day=gpu_hours_per_day)
    slo = None
    if setup.slo is not None:
        slo = slo_at(setup.slo, quantile=quantile, gpu_hours_per_day=gpu_hours_per_day)
    return dataclasses.replace(setup, budgets=budgets, slo=slo)
