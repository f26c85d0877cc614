"""Training time and peak memory: one pool, 28 days of 1-minute data, on this machine.

Each measurement runs in a fresh process so its peak RSS is its own: the full ``train_pool``
(backtest of every candidate, selection, final fit, publish) and the final fit of each model
alone. Run: ``.venv/bin/python -m bench.performance.train_time``
"""

from __future__ import annotations

import multiprocessing
import resource
import tempfile
import time
from pathlib import Path

from threadpoolctl import threadpool_limits

from forecaster.durations import DAY
from forecaster.forecasting.artifacts import ArtifactStore
from forecaster.forecasting.registry import build, candidates, known_names
from forecaster.forecasting.training import TrainingPlan, train_pool
from forecaster.sources.files import CsvSource

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
HISTORY_DAYS = 28


def plan() -> TrainingPlan:
    return TrainingPlan(
        models=tuple(known_names()),
        horizons_seconds=(300, 900, 1800),
        quantiles=(0.5, 0.95),
        selection_horizon_seconds=900,
        target_quantile=0.95,
        coverage_tolerance=0.01,
        min_history_seconds=14 * DAY,
        test_seconds=7 * DAY,
        train_seconds=14 * DAY,
        origin_every_seconds=300,
        refit_every_seconds=DAY,
    )


def measure(filename: str, what: str, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    with threadpool_limits(limits=1):
        path = SAMPLES / filename
        full, _ = CsvSource({path.stem: path}).fetch_all(path.stem, step_seconds=60)
        series, report = CsvSource({"pool": path}).fetch(
            "pool", start=full.end - HISTORY_DAYS * DAY + 60, end=full.end, step_seconds=60
        )
        began = time.perf_counter()
        if what == "train_pool":
            with tempfile.TemporaryDirectory() as tmp:
                result = train_pool(
                    series,
                    report,
                    plan=plan(),
                    store=ArtifactStore(Path(tmp)),
                    created="20260101T000000Z",
                )
            detail = f"selected {result.selection.model if result.selection else '-'}"
        else:
            build(what, horizons_seconds=(300, 900, 1800), quantiles=(0.5, 0.95)).fit(series)
            detail = "fit only, 3 horizons x 2 quantiles"
        seconds = time.perf_counter() - began
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put((filename, what, len(series), seconds, rss_mib, detail))


def main() -> None:
    context = multiprocessing.get_context("spawn")
    print(f"{'series':<26} {'what':<16} {'points':>7} {'seconds':>8} {'peak RSS MiB':>13}  detail")
    for filename in ("helios-earth-2020-05.csv", "msr-itp-cluster04.csv"):
        for what in ("train_pool", *candidates()):
            queue = context.Queue()
            process = context.Process(target=measure, args=(filename, what, queue))
            process.start()
            name, label, points, seconds, rss, detail = queue.get()
            process.join()
            print(f"{name:<26} {label:<16} {points:>7} {seconds:>8.1f} {rss:>13.0f}  {detail}")


if __name__ == "__main__":
    main()
