"""Forecast quality benchmark: every model on both shared series at 5, 15 and 30 minutes.

Prints, per series and horizon, each model's P95 coverage, pinball loss at 0.95, change against
the persistence-quantile baseline of the same run, mean headroom and mean fit time - and two
hindsight bounds that no real model can beat, to show how much the data lets any model gain:

* ``oracle-constant``: persistence plus the single offset that is best *on the test week itself*;
* ``oracle-daily``: the same with the best offset chosen separately for each test day.

Run:
``.venv/bin/python -m bench.experiments.forecast_quality [--horizons 5m,15m,30m] [--models ...]``
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from forecaster.cli.report import backtest_header, score_table
from forecaster.core.series import DemandSeries
from forecaster.durations import DAY, parse_duration
from forecaster.forecasting.backtest import BacktestSpec, ModelScore
from forecaster.forecasting.features import levels_at, take
from forecaster.forecasting.registry import known_names
from forecaster.forecasting.scoring import coverage, headroom, pinball_loss
from forecaster.forecasting.training import TrainingPlan, backtest_models
from forecaster.sources.files import CsvSource

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
SERIES = ("helios-earth-2020-05.csv", "msr-itp-cluster04.csv")


def oracle_scores(series: DemandSeries, spec: BacktestSpec) -> list[ModelScore]:
    """Hindsight bounds: the best constant offset over the test week, and per test day."""
    first = series.end + series.step_seconds - spec.test_seconds
    first -= (first - series.start) % spec.origin_every_seconds
    at = np.arange(first, series.end - spec.horizon_seconds + 1, spec.origin_every_seconds)
    level = levels_at(series, at)
    actual = take(series.values, series.index_of(at + spec.horizon_seconds))
    keep = np.isfinite(level) & np.isfinite(actual)
    at, level, actual = at[keep], level[keep], actual[keep]
    change = actual - level
    out = []
    constant = level + np.quantile(change, spec.quantile)
    daily = np.empty_like(level)
    day = (at - first) // DAY
    for d in np.unique(day):
        daily[day == d] = level[day == d] + np.quantile(change[day == d], spec.quantile)
    for name, upper in (("oracle-constant", constant), ("oracle-daily", daily)):
        out.append(
            ModelScore(
                model=name,
                coverage=coverage(actual, upper),
                pinball=pinball_loss(actual, upper, quantile=spec.quantile),
                headroom_gpus=headroom(actual, upper),
                mean_fit_seconds=0.0,
                points=int(actual.size),
                failures=0,
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizons", default="5m,15m,30m")
    parser.add_argument("--models", default=",".join(known_names()))
    args = parser.parse_args()
    horizons = [parse_duration(h) for h in args.horizons.split(",")]
    models = tuple(args.models.split(","))
    for filename in SERIES:
        path = SAMPLES / filename
        series, _ = CsvSource({path.stem: path}).fetch_all(path.stem, step_seconds=60)
        for horizon in horizons:
            spec = BacktestSpec(horizon_seconds=horizon)
            plan = TrainingPlan(
                models=models,
                horizons_seconds=(horizon,),
                quantiles=(0.5, 0.95),
                selection_horizon_seconds=horizon,
                target_quantile=0.95,
                coverage_tolerance=0.01,
                min_history_seconds=0,
                test_seconds=spec.test_seconds,
                train_seconds=spec.train_seconds,
                origin_every_seconds=spec.origin_every_seconds,
                refit_every_seconds=spec.refit_every_seconds,
            )
            began = time.perf_counter()
            _, scores = backtest_models(series, plan, spec=spec)
            elapsed = time.perf_counter() - began
            print(backtest_header(filename, spec) + f"  [{elapsed:.0f}s]")
            rows = scores + oracle_scores(series, spec)
            for line in score_table(rows, quantile=0.95, baseline="persistence", selected=None):
                print(line)
            print()


if __name__ == "__main__":
    with threadpool_limits(limits=1):
        main()
