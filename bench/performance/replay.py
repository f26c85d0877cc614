"""Replay benchmark: all five policies and a static sweep on the ITP job trace.

Pool of 8-GPU nodes, provisioning 60 s, image pull 5 min, empty nodes removed after 5 min;
trace days 0-50 with days 0-10 as warm-up (excluded from the metrics). Prints the policy table,
GPU-hours relative to the oracle, where each policy sits against the static curve at equal
GPU-hours, and each run's wall time and the process's peak RSS. It runs the replay command's
own code (``app.build_replay.trace_replay``, ``app.replay_runs``) without its argument parser;
``forecaster replay --json/--report`` writes the documents.

Run:
``.venv/bin/python -m bench.performance.replay [--sweep 0,16,32,48,64,96,128]``
(``--model quantreg-raw``)
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from threadpoolctl import threadpool_limits

from forecaster.app.build_replay import trace_replay
from forecaster.app.replay_runs import against_static, run_all, table
from forecaster.core.jobs import JobTrace
from forecaster.simulation.frontier import parse_days
from forecaster.simulation.pool import SimulatedPool
from forecaster.simulation.replay import ReplaySetup

ROOT = Path(__file__).resolve().parents[2]


def trace_windows(
    trace: str, *, tune_days: str, eval_days: str
) -> tuple[JobTrace, int, ReplaySetup, tuple[float, float], tuple[float, float]]:
    """An ITP trace (``cluster04``...) replayed with the CLI's defaults from day 0 to the end of
    the evaluation window, measured from the tuning window's start: its jobs, epoch, setup and
    the two windows in days (what the benches that judge points on both windows share)."""
    tune = parse_days(tune_days, "--tune-days")
    evaluate = parse_days(eval_days, "--eval-days")
    jobs, epoch, setup = trace_replay(
        ROOT / f"data/samples/msr-itp-{trace}-jobs.csv",
        start_day=0.0,
        warmup_days=tune[0],
        end_day=evaluate[1],
    )
    return jobs, epoch, setup, tune, evaluate


def main() -> None:
    own = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    own.add_argument("--sweep", default="0,16,32,48,64,96,128")
    own.add_argument("--model", default="quantreg-raw")
    own.add_argument(
        "--quantile", default="0.95", help="forecast quantile the predictive plans for"
    )
    own.add_argument("--policies", default="reactive,static,schedule,predictive,oracle")
    mine = own.parse_args()
    jobs, _, setup = trace_replay(
        ROOT / "data/samples/msr-itp-cluster04-jobs.csv",
        SimulatedPool(model=mine.model, quantile=float(mine.quantile)),
    )
    static_gpus = 64  # the plain 'static' policy's K, as the replay command's default
    results, timings = [], []
    for name in mine.policies.split(","):
        began = time.perf_counter()
        results += run_all([name], jobs, setup=setup, static_gpus=static_gpus)
        timings.append((results[-1].policy, time.perf_counter() - began))
    sweep = []
    for k in filter(None, mine.sweep.split(",")):
        began = time.perf_counter()
        sweep += run_all([f"static:{k}"], jobs, setup=setup, static_gpus=static_gpus)
        timings.append((sweep[-1].policy, time.perf_counter() - began))
    print(
        f"ITP jobs trace: {len(jobs)} jobs, days 0-50, metrics days 10-50;"
        f" predictive model {setup.model}"
    )
    for line in table(results + sweep):
        print(line)
    oracle = next((r.metrics for r in results if r.policy == "oracle"), None)
    for r in results if oracle is not None else []:
        assert oracle is not None
        print(f"{r.policy:>12}: GPU-hours {r.metrics.gpu_hours / oracle.gpu_hours:.3f} x oracle")
    for line in against_static(results, sweep):
        print(line)
    print("run time per policy (s): " + ", ".join(f"{p} {t:.1f}" for p, t in timings))
    print(
        "peak RSS of the process:"
        f" {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )


if __name__ == "__main__":
    with threadpool_limits(limits=1):
        main()
