"""Where one predictive replay spends its time: cProfile over the replay the frontier runs most.

Runs ``predictive`` (the daemon's reconcile loop on the twin, retrained weekly) once on an ITP
trace with the CLI's defaults, under ``cProfile``, and prints the wall time, then the share of
it spent in each layer of the data path (by the module of each function's own time: the twin,
the reconcile loop, the planner, the models' fitting and prediction, the rest) and the
functions with the most cumulative and own time. The frontier runs 16 of these per trace, so
this is what a faster frontier has to cut.

Run: ``.venv/bin/python -m bench.performance.replay_profile [--trace cluster04] [--days 0-30]``
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
from collections import defaultdict

from threadpoolctl import threadpool_limits

from bench.performance.replay import ROOT
from forecaster.app.build_replay import trace_replay
from forecaster.app.replay_policies import replay_policy
from forecaster.simulation.frontier import parse_days
from forecaster.simulation.replay import replay

LAYERS = (
    ("twin (simulation.twin)", "forecaster/simulation/twin"),
    ("replay ports, retraining", "forecaster/simulation/"),
    ("reconcile loop", "forecaster/reconcile/"),
    ("planner and core", "forecaster/core/"),
    ("forecasting (forecaster)", "forecaster/forecasting/"),
    ("statsmodels / scikit-learn / scipy", ("statsmodels", "sklearn", "scipy")),
    ("numpy / pandas", ("numpy", "pandas")),
)


def layer_of(filename: str) -> str:
    """The layer a function's file belongs to (``LAYERS``; else "other")."""
    for name, marker in LAYERS:
        markers = (marker,) if isinstance(marker, str) else marker
        if any(f"/{m}" in filename for m in markers):
            return name
    return "other (stdlib, logging, dataclasses...)"


def main() -> None:
    own = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    own.add_argument("--trace", choices=("cluster04", "cluster07"), default="cluster04")
    own.add_argument("--days", default="0-30", help="trace days replayed, FROM-TO (0-30)")
    own.add_argument("--top", type=int, default=15)
    mine = own.parse_args()
    first, last = parse_days(mine.days, "--days")
    jobs, _, setup = trace_replay(
        ROOT / f"data/samples/msr-itp-{mine.trace}-jobs.csv",
        start_day=first,
        warmup_days=10.0,
        end_day=last,
    )
    profile = cProfile.Profile()
    with threadpool_limits(limits=1):
        began = time.perf_counter()
        profile.enable()
        replay(jobs, replay_policy("predictive", setup, jobs=jobs), setup=setup)
        profile.disable()
        took = time.perf_counter() - began
    stats = pstats.Stats(profile)
    own_time: dict[str, float] = defaultdict(float)
    total = 0.0
    for (filename, _, _), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        own_time[layer_of(filename)] += tottime
        total += tottime
    print(
        f"predictive on {mine.trace} days {mine.days}: {took:.1f} s wall"
        f" ({total:.1f} s profiled, the profiler's own overhead included)"
    )
    for name, seconds in sorted(own_time.items(), key=lambda kv: -kv[1]):
        print(f"  {seconds / total:6.1%}  {seconds:7.1f} s  {name}")
    for key in ("cumulative", "tottime"):
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats(key).print_stats(mine.top)
        print(f"-- top {mine.top} by {key}")
        print("\n".join(text.getvalue().splitlines()[6:]))


if __name__ == "__main__":
    main()
