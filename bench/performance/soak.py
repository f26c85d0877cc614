"""Soak: the daemon on the cluster twin for 30 simulated days, as fast as it runs.

Prints, per simulated day, the process RSS, the thread count, the number of ERROR log records
and the day's hand-offs, then the totals; flat RSS/threads and no growing error count mean no
leak. The twin replays the ITP jobs from trace day 0 (14 warm-up days, then 30 soaked days);
ticks every 2 simulated minutes; weekly retraining with hot reload as in ``forecaster run``.

Run: ``.venv/bin/python -m bench.performance.soak [--days 30] [--every 120]``
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import threading
import time
from pathlib import Path

from threadpoolctl import threadpool_limits

from bench.measure import rss_mib
from forecaster.app.build import build_embedded
from forecaster.durations import DAY
from forecaster.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]


class Counter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--every", type=int, default=120)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("forecaster.reconcile.loop").setLevel(logging.ERROR)
    errors = Counter()
    logging.getLogger().addHandler(errors)
    settings = load_settings(ROOT / "config" / "forecaster.yaml", env={})
    twin = settings.twin.model_copy(update={"end_day": settings.twin.warmup_days + args.days + 1})
    settings = settings.model_copy(update={"twin": twin, "reconcile_every_seconds": args.every})
    began = time.perf_counter()
    run = build_embedded(settings, models_dir=Path(tempfile.mkdtemp()))
    print(f"warm-up and first training: {time.perf_counter() - began:.1f} s")
    print(f"{'day':>4} {'RSS MiB':>8} {'threads':>8} {'errors':>7} {'mode':>12} {'model':>30}")
    rows = []
    for day in range(1, args.days + 1):
        run.step(run.twin.now + DAY)
        record = run.daemon.last
        mode = record.plan.pool(run.pool).mode.value if record else "-"
        version = record.pools[run.pool].model_version if record else "-"
        rows.append((rss_mib(), threading.active_count(), errors.count))
        rss, threads, _ = rows[-1]
        print(f"{day:>4} {rss:>8.0f} {threads:>8} {errors.count:>7} {mode:>12} {version!s:>30}")
    print(
        f"{args.days} simulated days, {run.daemon.ticks} ticks"
        f" in {time.perf_counter() - began:.0f} s;"
        f" RSS day 1 {rows[0][0]:.0f} MiB -> day {args.days} {rows[-1][0]:.0f} MiB;"
        f" threads {rows[0][1]} -> {rows[-1][1]}; ERROR records {errors.count}"
    )


if __name__ == "__main__":
    with threadpool_limits(limits=1):
        main()
