"""What the error budget's hand-offs cost a predictive point: the waits of jobs submitted while
the pool was handed off, and the same point replayed with an SLO that never hands off.

The error budget hands a pool to reactive scaling when its forecast misses more than its SLO
allows (``core.error_budget``); while handed off the pool holds no prewarm, so its jobs wait as
under reactive scaling. This replays one operating point (a quantile and a floor) from day 0 to
the end of the evaluation window twice - as shipped, and with burn thresholds no window reaches
(the waste budget as shipped) - and prints, per window, the hours handed off, the jobs
submitted then and their mean wait against the others', and the share of all wait-seconds
spent in those hours; then both runs' metrics side by side. A point whose waits barely move
without hand-offs owes its waits to its plan, not to the safety rule.

Run:
``.venv/bin/python -m bench.experiments.handoffs --trace cluster07 --quantile 0.95``
(``--floor-gpus 0``)
(two replays at once on 2 workers; about 90 s each here).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import logging
import resource
import time

import numpy as np

from bench.performance.replay import trace_windows
from forecaster.app.replay_policies import replay_policy
from forecaster.core.jobs import JobTrace
from forecaster.core.planner import Mode
from forecaster.durations import DAY
from forecaster.simulation.metrics import measure
from forecaster.simulation.replay import Predictive, ReplaySetup, replay
from forecaster.simulation.workers import run_each, usable_cpus

NEVER = 1e9
"""A burn no window reaches."""


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One replay: per window, its metrics and what its hand-off hours held."""

    handoffs: int
    lines: tuple[str, ...]


def main() -> None:
    own = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    own.add_argument("--trace", choices=("cluster04", "cluster07"), default="cluster07")
    own.add_argument("--quantile", type=float, default=0.95)
    own.add_argument("--floor-gpus", type=int, default=0)
    own.add_argument("--tune-days", default="10-30")
    own.add_argument("--eval-days", default="30-50")
    own.add_argument("--workers", type=int, default=usable_cpus())
    mine = own.parse_args()
    logging.basicConfig(level=logging.WARNING)
    jobs, epoch, setup, tune, evaluate = trace_windows(
        mine.trace, tune_days=mine.tune_days, eval_days=mine.eval_days
    )
    shipped = setup.at_point(mine.quantile, mine.floor_gpus)
    slo = shipped.slo_policy
    never = dataclasses.replace(
        shipped,
        slo=dataclasses.replace(slo, fast_burn=NEVER, slow_burn=NEVER, recovery_burn=NEVER),
    )
    windows = {"tune": tune, "eval": evaluate}
    began = time.perf_counter()
    outcomes = run_each(
        functools.partial(_outcome, jobs=jobs, epoch=epoch, windows=windows),
        [shipped, never],
        workers=mine.workers,
    )
    label = f"P{mine.quantile * 100:g}" + (f"+{mine.floor_gpus}" if mine.floor_gpus else "")
    print(
        f"{mine.trace} {label}: 2 replays on {mine.workers} workers in"
        f" {time.perf_counter() - began:.0f} s (days 0-{evaluate[1]:g})"
    )
    for name, outcome in zip(("as shipped", "never handing off"), outcomes, strict=True):
        print(f"-- {name}: {outcome.handoffs} hand-offs over the run")
        for line in outcome.lines:
            print("   " + line)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB (parent)")


def _outcome(
    setup: ReplaySetup,
    *,
    jobs: JobTrace,
    epoch: int,
    windows: dict[str, tuple[float, float]],
) -> Outcome:
    policy = replay_policy("predictive", setup, jobs=jobs)
    assert isinstance(policy, Predictive)
    record = replay(jobs, policy, setup=setup).record
    transitions = [
        t for pool in policy.reconciler.state.pools.values() for t in pool.budget.transitions
    ]
    off: list[tuple[float, float]] = []  # handed off or recovering: no prewarm
    since: float | None = None
    for t in sorted(transitions, key=lambda t: t.at):
        if t.after is not Mode.PREDICTIVE and since is None:
            since = t.at
        elif t.after is Mode.PREDICTIVE and since is not None:
            off.append((since, t.at))
            since = None
    if since is not None:
        off.append((since, float(record.end)))
    start = np.where(np.isnan(record.job_start), record.end, record.job_start)
    waits = start - record.job_submit
    lines = []
    for name, (first, last) in windows.items():
        lo, hi = epoch + first * DAY, epoch + last * DAY
        m = measure(
            record,
            window=(lo, hi),
            price_on_demand=setup.price_on_demand,
            price_spot=setup.price_spot,
        )
        inside = (record.job_submit >= lo) & (record.job_submit < hi)
        handed = np.zeros_like(inside)
        for a, b in off:
            handed |= (record.job_submit >= a) & (record.job_submit < b)
        hours = sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in off) / 3600
        w_off, w_on = waits[inside & handed], waits[inside & ~handed]
        share = w_off.sum() / max(1.0, waits[inside].sum())
        lines.append(
            f"{name} days {first:g}-{last:g}: {m.gpu_hours:,.0f} GPU-h, mean {m.mean_wait_s:.1f} s,"
            f" P95 {m.p95_wait_s:.0f} s, > 5 min {m.share_waiting_over_5min:.1%};"
            f" handed off {hours:.1f} h: {w_off.size} jobs, mean {_mean(w_off):.1f} s"
            f" (others {_mean(w_on):.1f} s), {share:.1%} of the wait-seconds"
        )
    return Outcome(policy.handoffs, tuple(lines))


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else 0.0


if __name__ == "__main__":
    main()
