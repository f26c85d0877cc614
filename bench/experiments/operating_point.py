"""The daemon's own operating-point choice on the ITP traces, against the frontier's.

What the training job would do at a retrain on day 30 of each trace: take the pool's demand
history as Prometheus would hold it (GPUs requested by running + pending pods per minute, here
from a reactive replay of the jobs - the jobs themselves are not visible to the daemon), the
last 28 days of it (``forecast.history_days``), and choose the quantile and floor for a +5 % and
a +10 % GPU-hours budget by replaying that history (``simulation.operating_point``: measured on
its last 14 days, each candidate under the cap its budget sets). Prints, per trace and budget,
the chosen quantile, every candidate and the run time, and how the choice did on the
evaluation days (``--eval-days``) against static headroom there: the static curve of
``--frontier-json`` (``replay --frontier --json`` of the same trace, which adds the frontier's
own choice on its tuning window), or replayed here. Where the choice holds a floor its
GPU-hours/day cap cannot carry for a day, the choice without such floors is judged beside it
(a rule measured, not built).

To judge on tuning days only: ``--retrain-day 20 --history-days 20 --eval-days 20-30``.

With ``--p95-wait SECONDS`` it chooses for that wait target instead (under the replay's own
GPU-hours/day cap, as the daemon keeps the configured one) and prints the evaluation P95 beside
the target. With ``--history pods`` the replays run the pool's pods instead, as
kube-state-metrics would hold them (``sources.prometheus.POD_QUERIES``): the trace's jobs up to
the retrain, each split into node-sized pods.

Run: ``.venv/bin/python -m bench.experiments.operating_point --trace cluster04
[--frontier-json out/frontier-c04.json] [--history pods]``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import resource
import time
from pathlib import Path
from typing import Any

import numpy as np

from forecaster.app.build_replay import simulated_setup, trace_replay
from forecaster.app.replay_policies import replay_policy
from forecaster.core.jobs import JobTrace
from forecaster.core.operating_point import (
    REPLAYED,
    Budget,
    OperatingPoint,
    choose,
    point_label,
)
from forecaster.core.series import DemandSeries
from forecaster.durations import DAY
from forecaster.simulation.frontier import (
    BUDGETS_PERCENT,
    FLOOR_NODES,
    PREDICTIVE_KNOBS,
    STATIC_KNOBS,
    from_document,
    parse_days,
    ratios,
)
from forecaster.simulation.metrics import ReplayMetrics
from forecaster.simulation.operating_point import choose_operating_point, under_budget
from forecaster.simulation.pool import SimulatedPool
from forecaster.simulation.replay import replay

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    own = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    own.add_argument("--trace", choices=("cluster04", "cluster07"), default="cluster04")
    own.add_argument("--retrain-day", type=float, default=30.0)
    own.add_argument("--history-days", type=float, default=28.0)
    own.add_argument("--measure-days", type=float, default=14.0)
    own.add_argument("--frontier-json", type=Path, default=None)
    own.add_argument("--eval-days", default="30-50", help="where the chosen point is judged")
    own.add_argument(
        "--history",
        choices=("demand", "pods"),
        default="demand",
        help="what the replays run: the demand level rebuilt as pods, or the pool's pods as"
        " kube-state-metrics shows them (the trace's jobs, split into node-sized pods)",
    )
    own.add_argument(
        "--p95-wait",
        type=float,
        action="append",
        default=[],
        metavar="SECONDS",
        help="choose for this P95 wait target (repeatable) instead of the +5/+10 %% budgets",
    )
    mine = own.parse_args()
    logging.basicConfig(level=logging.WARNING)
    # the judging replay is the daemon's loop in simulated time: its hand-offs are counted in
    # the printed figures, not logged one by one
    logging.getLogger("forecaster.reconcile").setLevel(logging.CRITICAL)
    jobs_file = ROOT / f"data/samples/msr-itp-{mine.trace}-jobs.csv"
    pool = SimulatedPool()  # the replay command's pool
    jobs, epoch, setup = trace_replay(
        jobs_file, pool, start_day=0.0, warmup_days=1.0, end_day=mine.retrain_day
    )
    began = time.perf_counter()
    record = replay(jobs, replay_policy("reactive", setup, jobs=jobs), setup=setup).record
    level = DemandSeries(record.minute_start, 60, record.demand.astype(float), name="itp")
    history = level.window(
        int(epoch + (mine.retrain_day - mine.history_days) * DAY),
        int(epoch + mine.retrain_day * DAY),
    )
    print(
        f"{mine.trace}: retrain at day {mine.retrain_day:g}; demand history days"
        f" {mine.retrain_day - mine.history_days:g}-{mine.retrain_day:g} (from a reactive"
        f" replay, {time.perf_counter() - began:.0f} s), measured on the last"
        f" {mine.measure_days:g}"
    )
    frontier = json.loads(mine.frontier_json.read_text()) if mine.frontier_json else None
    static, reactive = _static_curve(frontier, jobs, pool, epoch, mine.eval_days)
    pods = as_pods(jobs, setup.twin.gpus_per_node) if mine.history == "pods" else None
    print(f"the replays run {REPLAYED[mine.history]}")
    budgets = [Budget(p95_wait_s=s) for s in mine.p95_wait] or [
        Budget(percent=p) for p in BUDGETS_PERCENT
    ]
    for budget in budgets:
        began = time.perf_counter()
        point = choose_operating_point(
            history,
            setup,
            make_policy=replay_policy,
            quantiles=PREDICTIVE_KNOBS,
            floors_gpus=[n * setup.twin.gpus_per_node for n in FLOOR_NODES],
            budget=budget,
            measure_seconds=int(mine.measure_days * DAY),
            pods=pods,
        )
        took = time.perf_counter() - began
        if point is None:
            print(f"{budget.label}: no operating point ({took:.0f} s)")
            continue
        print(
            f"{budget.label}: daemon chooses {point.label} in {took:.0f} s;"
            f" cap {point.gpu_hours_per_day_budget:,.0f} GPU-hours/day"
            f" (reactive {point.reactive_gpu_hours_per_day:,.0f}/day); {point.reason}"
        )
        if frontier is not None and budget.percent is not None:
            for line in _against_frontier(frontier, point, round(budget.percent)):
                print("    " + line)
        _judge(jobs, pool, epoch, point, mine.eval_days, static=static, reactive=reactive)
        carried = _carried_floors(point)
        if carried is not None:
            print(
                f"    without floors the {point.gpu_hours_per_day_budget:,.0f} GPU-hours/day cap"
                f" cannot carry for a day ({point.gpu_hours_per_day_budget / 24:.0f} GPUs):"
                f" {carried.label}"
            )
            _judge(jobs, pool, epoch, carried, mine.eval_days, static=static, reactive=reactive)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def as_pods(jobs: JobTrace, gpus_per_node: int) -> JobTrace:
    """The jobs as kube-state-metrics shows them: a job bigger than a node is that many
    node-sized pods (the last one holding the rest), each its own pod."""
    per_job = np.maximum(1, -(-jobs.gpus // gpus_per_node))
    index = np.repeat(np.arange(len(jobs)), per_job)
    first = np.cumsum(per_job) - per_job
    nth = np.arange(index.size) - np.repeat(first, per_job)
    gpus = np.minimum(gpus_per_node, jobs.gpus[index] - nth * gpus_per_node)
    return JobTrace(submit=jobs.submit[index], duration=jobs.duration[index], gpus=gpus)


def _static_curve(
    frontier: dict[str, Any] | None,
    jobs: JobTrace,
    pool: SimulatedPool,
    epoch: int,
    days: str,
) -> tuple[list[ReplayMetrics], float]:
    """Static headroom on the evaluation days and reactive's GPU-hours there: the frontier's
    (``--frontier-json``, its evaluation window), or replayed here for ``days``."""
    if frontier is not None:
        return [from_document(m) for m in frontier["static"]], frontier["reactive"]["gpu_hours"]
    first, last = parse_days(days, "--eval-days")
    setup = simulated_setup(pool, epoch=epoch, start_day=0.0, warmup_days=first, end_day=last)
    began = time.perf_counter()
    curve = [
        replay(jobs, replay_policy(f"static:{k}", setup, jobs=jobs), setup=setup).metrics
        for k in (0, *STATIC_KNOBS)
    ]
    print(f"static headroom replayed on days {days} ({time.perf_counter() - began:.0f} s)")
    return curve[1:], curve[0].gpu_hours  # static:0 is reactive


def _judge(
    jobs: JobTrace,
    pool: SimulatedPool,
    epoch: int,
    point: OperatingPoint,
    days: str,
    *,
    static: list[ReplayMetrics],
    reactive: float,
) -> None:
    """Replay the real jobs with the daemon at ``point`` on ``days`` and print it against
    static headroom there."""
    began = time.perf_counter()
    judged = _as_the_daemon_runs_it(jobs, pool, epoch, point, days)
    print(
        f"    daemon's {point.label} under its cap and SLO on days {days}"
        f" ({time.perf_counter() - began:.0f} s):"
        f" {judged.gpu_hours / reactive - 1:+.1%} GPU-hours,"
        f" P95 wait {judged.p95_wait_s:.0f} s, mean {judged.mean_wait_s:.0f} s,"
        f" {judged.cap_breaches} cap breaches, {judged.handoffs} hand-offs, vs static: "
        + ratios(judged, static)
    )


def _carried_floors(point: OperatingPoint) -> OperatingPoint | None:
    """The choice among the candidates whose floor the GPU-hours/day cap can carry for a whole
    day, where that differs from ``point`` (a rule judged here, not built: docs/results.md)."""
    if point.p95_wait_target_s is not None:
        return None
    cap = point.gpu_hours_per_day_budget
    carried = [c for c in point.candidates if c.floor_gpus * 24 <= cap]
    reactive = point.reactive_gpu_hours_per_day * (point.window[1] - point.window[0]) / DAY
    choice = choose(carried, reactive_gpu_hours=reactive, budget_percent=point.budget_percent)
    if choice is None:
        return None
    picked = choice.candidate
    if (picked.quantile, picked.floor_gpus) == (point.quantile, point.floor_gpus):
        return None
    return dataclasses.replace(point, quantile=picked.quantile, floor_gpus=picked.floor_gpus)


def _as_the_daemon_runs_it(
    jobs: JobTrace, pool: SimulatedPool, epoch: int, point: OperatingPoint, days: str
) -> ReplayMetrics:
    """The real jobs replayed with the daemon at ``point``: its quantile and floor, the cap its
    budget sets and the SLO that follows; measured on the evaluation days (as the frontier
    measures)."""
    first, last = parse_days(days, "--eval-days")
    setup = under_budget(
        simulated_setup(pool, epoch=epoch, start_day=0.0, warmup_days=first, end_day=last),
        quantile=point.quantile,
        floor_gpus=point.floor_gpus,
        gpu_hours_per_day=point.gpu_hours_per_day_budget,
    )
    result = replay(jobs, replay_policy("predictive", setup, jobs=jobs), setup=setup)
    return result.metrics


def _against_frontier(frontier: dict[str, Any], point: OperatingPoint, budget: int) -> list[str]:
    """The frontier's own choice for ``budget`` and how both did on its evaluation window."""
    reactive = frontier["reactive"]["gpu_hours"]
    static = [from_document(m) for m in frontier["static"]]
    by_knobs = {(m["knob"], m.get("floor_gpus", 0)): m for m in frontier["predictive"]}
    theirs = frontier["chosen"].get(str(budget))
    their_knobs = (theirs["knob"], theirs.get("floor_gpus", 0)) if theirs else None
    lines = [
        "frontier's choice on its tuning window: "
        + (point_label(*their_knobs) if their_knobs else "none within budget")
    ]
    for label, knobs in (
        ("daemon's", (point.quantile, point.floor_gpus)),
        ("frontier's", their_knobs),
    ):
        if knobs is None or knobs not in by_knobs:
            continue
        m = from_document(by_knobs[knobs])
        lines.append(
            f"{label} {point_label(*knobs)} in the frontier's sweep (no cap) on evaluation:"
            f" {m.gpu_hours / reactive - 1:+.1%} GPU-hours, vs static: " + ratios(m, static)
        )
    return lines


if __name__ == "__main__":
    main()
