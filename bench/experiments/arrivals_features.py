"""Is the arrivals model leaving information on the table? Pinball loss of the peak rise.

The replay's ``continuation`` bound says a model that knew the rest of every submission once its
first pod exists would wait far less than ``predictive`` does. This bench asks whether what the
pods *show* would get the arrivals model there, on the tuning days only (nothing here looks at
days after ``--tune-days``). On the history the weekly retrain sees (a reactive replay's demand
and pod creations per minute, days 0 to the end of the tuning window) it fits the rise target of
``forecasting.arrivals`` (peak additional demand over the horizon the replay plans at) and prints
the pinball loss, cross-validated by contiguous time block over the tuning days, of:

* ``shipped``: the model's own features, linear quantile regression (what ``predictive`` runs,
  here without its conformal shift - on every side alike: the comparison is of the fits);
* ``+submission``: plus what the pods show about the submission under way - GPUs created in the
  current run of minutes with creations, whether the last minute had any, how long since the
  last creation, log counts;
* ``+pending``: plus the GPUs of pods pending at that minute and how long the oldest of them
  has waited (log1p of seconds) - the rest of what a pod list shows (the level already counts
  pending GPUs with running ones);
* ``gbm``/``gbm+submission``: the same two sets through gradient-boosted quantile trees
  (scikit-learn), so a non-linear shape of the same information is tried too;
* ``+rest of submission (foresight)``: the shipped features plus the GPUs the current
  submission (jobs at most ``--gap`` seconds apart) will still create within the horizon - the
  information the continuation bound has and no pod shows. Not a model: the ceiling's scale.

Run: ``.venv/bin/python -m bench.experiments.arrivals_features [--trace cluster04 cluster07]``
"""

from __future__ import annotations

import argparse
import dataclasses
import heapq
import resource
import time
import warnings
from collections.abc import Callable

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor

from bench.performance.replay import ROOT
from forecaster.app.build_replay import trace_replay
from forecaster.core.jobs import JobTrace
from forecaster.core.series import DemandSeries
from forecaster.durations import DAY
from forecaster.forecasting.arrivals import (
    ROW_STRIDE,
    _quantreg,
    features,
    peak_rise,
    trailing_counts,
)
from forecaster.simulation.frontier import parse_days
from forecaster.simulation.policies import Reactive, submission_starts
from forecaster.simulation.twin import Twin

QUANTILES = (0.8, 0.9, 0.95)
FOLDS = 5


def main() -> None:
    own = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    own.add_argument("--trace", nargs="+", default=["cluster04", "cluster07"])
    own.add_argument("--tune-days", default="10-30")
    own.add_argument("--gap", type=float, default=60.0, help="submission gap for the foresight")
    mine = own.parse_args()
    first_day, last_day = parse_days(mine.tune_days, "--tune-days")
    for trace in mine.trace:
        began = time.perf_counter()
        jobs, epoch, setup = trace_replay(ROOT / f"data/samples/msr-itp-{trace}-jobs.csv")
        setup = dataclasses.replace(setup, end=int(epoch + last_day * DAY))
        twin = Twin(jobs, Reactive(), setup.twin, start=setup.start, end=setup.end)
        record = twin.run()
        start, demand = twin.demand_history(since=setup.start)
        _, created = twin.arrival_history(since=setup.start)
        level = DemandSeries(start=start, step_seconds=60, values=demand.astype(float))
        arrivals = DemandSeries(start=start, step_seconds=60, values=created.astype(float))
        horizon = setup.horizon_seconds
        target = peak_rise(level, horizon_seconds=horizon)
        shipped = features(
            created=trailing_counts(arrivals), level=level.values, at=level.timestamps
        )
        submission = np.column_stack([shipped, _submission_so_far(arrivals.values)])
        pending = np.column_stack(
            [shipped, _pending(record.job_submit, record.job_start, record.job_gpus, level)]
        )
        foresight = np.column_stack(
            [shipped, _rest_of_submission(jobs, level.timestamps, horizon, mine.gap)]
        )
        rows = (
            np.isfinite(target)
            & np.isfinite(shipped).all(axis=1)
            & (level.timestamps >= epoch + first_day * DAY)
            & (np.arange(target.size) % ROW_STRIDE == 0)
        )
        print(
            f"{trace}: days {first_day:g}-{last_day:g}, {np.count_nonzero(rows):,} rows"
            f" (one minute in {ROW_STRIDE}), target: peak rise over {horizon} s;"
            f" pinball loss in GPUs, {FOLDS}-fold by time block (lower is better)"
        )
        designs = {
            "shipped": (shipped, _linear),
            "+submission": (submission, _linear),
            "+pending": (pending, _linear),
            "gbm": (shipped, _trees),
            "gbm+submission": (submission, _trees),
            f"+rest of submission, gap {mine.gap:g} s (foresight)": (foresight, _linear),
        }
        for quantile in QUANTILES:
            losses = {
                name: _cross_validated(x, target, rows, quantile, fit)
                for name, (x, fit) in designs.items()
            }
            base = losses["shipped"]
            print(
                f"  q {quantile:.2f}: "
                + ", ".join(f"{n} {v:.3f} ({v / base:.2f}x)" for n, v in losses.items())
            )
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"  {time.perf_counter() - began:.0f} s, peak RSS {peak:.0f} MiB", flush=True)


def _submission_so_far(created: np.ndarray) -> np.ndarray:
    """Per minute: GPUs created in the current run of minutes with creations (one empty minute
    allowed), whether the last minute had any, exp(-minutes since the last creation / 5) and
    log1p of the last minute's GPUs - what a pod list shows about the submission under way."""
    run = np.zeros(created.size)
    since = np.zeros(created.size)
    last = -(10**9)
    for i, gpus in enumerate(np.nan_to_num(created)):
        if gpus > 0:
            run[i] = (run[i - 1] if i and i - last <= 2 else 0.0) + gpus
            last = i
        else:
            run[i] = run[i - 1] if i and i - last <= 1 else 0.0
        since[i] = min(60, i - last)
    return np.column_stack(
        [run, (since == 0).astype(float), np.exp(-since / 5), np.log1p(np.nan_to_num(created))]
    )


def _pending(
    submit: np.ndarray, start: np.ndarray, gpus: np.ndarray, level: DemandSeries
) -> np.ndarray:
    """Per minute t: GPUs of pods pending at t (submitted by t, not started by t) and log1p of
    the seconds the oldest of them has waited (0 with none) - from the reactive replay's jobs."""
    at = level.timestamps.astype(float)
    started = np.where(np.isnan(start), np.inf, start)
    change = np.zeros(at.size + 1)
    np.add.at(change, np.searchsorted(at, submit, side="left"), gpus)
    np.add.at(change, np.searchsorted(at, started, side="left"), -gpus)
    pending_gpus = np.cumsum(change)[:-1]
    oldest = np.zeros(at.size)
    waiting: list[tuple[float, float]] = []  # (submit, start) of jobs submitted so far
    order = np.argsort(submit, kind="stable")
    j = 0
    for i, t in enumerate(at):
        while j < order.size and submit[order[j]] <= t:
            heapq.heappush(waiting, (float(submit[order[j]]), float(started[order[j]])))
            j += 1
        while waiting and waiting[0][1] <= t:  # the oldest has started: no longer pending
            heapq.heappop(waiting)
        # every job submitted before the top has started: the top is the oldest pending
        oldest[i] = np.log1p(t - waiting[0][0]) if waiting else 0.0
    return np.column_stack([pending_gpus, oldest])


def _rest_of_submission(
    jobs: JobTrace, at: np.ndarray, horizon: int, gap_seconds: float
) -> np.ndarray:
    """Per grid time t: GPUs of jobs submitted in (t, t + horizon] whose submission began by t."""
    submit = jobs.submit.astype(float)
    begun = submission_starts(jobs, gap_seconds=gap_seconds)
    known = np.zeros(at.size + 1)
    # a job counts at t in [max(begun, submit - horizon), submit)
    lo = np.searchsorted(at, np.maximum(begun, submit - horizon), side="left")
    hi = np.searchsorted(at, submit, side="left")
    later = hi > lo
    np.add.at(known, lo[later], jobs.gpus[later])
    np.add.at(known, hi[later], -jobs.gpus[later])
    return np.cumsum(known)[:-1]


Fit = Callable[[np.ndarray, np.ndarray, float], Callable[[np.ndarray], np.ndarray]]


def _linear(x: np.ndarray, y: np.ndarray, quantile: float) -> Callable[[np.ndarray], np.ndarray]:
    beta = _quantreg(x, y, quantile)
    return lambda rows: rows @ beta


def _trees(x: np.ndarray, y: np.ndarray, quantile: float) -> Callable[[np.ndarray], np.ndarray]:
    model = HistGradientBoostingRegressor(
        loss="quantile", quantile=quantile, max_iter=200, max_leaf_nodes=15, random_state=0
    ).fit(x, y)
    return lambda rows: np.asarray(model.predict(rows))


def _cross_validated(
    x: np.ndarray, y: np.ndarray, rows: np.ndarray, quantile: float, fit: Fit
) -> float:
    """Mean pinball loss of each time block predicted by a fit on the other blocks (clipped at
    zero, as the model's rise is)."""
    index = np.flatnonzero(rows)
    losses = []
    for block in np.array_split(index, FOLDS):
        rest = np.setdiff1d(index, block)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            predict = fit(x[rest], y[rest], quantile)
        error = y[block] - np.maximum(0.0, predict(x[block]))
        losses.append(np.maximum(quantile * error, (quantile - 1) * error))
    return float(np.mean(np.concatenate(losses)))


if __name__ == "__main__":
    main()
