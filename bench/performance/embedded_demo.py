"""The embedded default as `scripts/run` serves it, two simulated days after the warm-up, as fast
as the machine goes: is prewarm held in every simulated hour that needs it, what share of it
expired unused, and how fast the twin runs (simulated seconds per real second) as the day's
trail grows.

Prints the hourly line the demo prints every sixth hour and at every hour held at zero, then
the tally. Run: ``.venv/bin/python -m bench.performance.embedded_demo [--days 2]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from forecaster.app.build import build_embedded
from forecaster.service.embedded import summary
from forecaster.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=float, default=2.0)
    args = parser.parse_args()
    settings = load_settings(ROOT / "config" / "forecaster.yaml", env={})
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as models:
        run = build_embedded(settings, models_dir=Path(models))
        print(f"warm-up and first training: {time.perf_counter() - began:.1f} s", flush=True)
        hours, needing, held_zero, speeds = round(args.days * 24), 0, 0, []
        for hour in range(hours):
            wall = time.perf_counter()
            run.step(run.twin.now + 3600)
            speeds.append(3600 / (time.perf_counter() - wall))
            assert run.daemon.last is not None
            plan = run.daemon.last.plan.pool(run.pool)
            line = summary(run, speed=speeds[-1])
            needs = plan.needed_gpus > 0 or plan.target_gpus > 0
            needing += needs
            zero = needs and plan.target_gpus == 0
            held_zero += zero
            if hour % 6 == 0 or zero:
                print(line, flush=True)
        spend = run.daemon.spend(run.pool)
    wasted = min(spend.wasted_gpu_hours, spend.prewarm_gpu_hours) / max(
        spend.prewarm_gpu_hours, 1e-9
    )
    print(
        f"{hours} simulated hours: {needing} needed prewarm, {held_zero} of them held none;"
        f" last 24 h prewarm {spend.prewarm_gpu_hours:.0f} GPU-h, {wasted:.0%} expired unused;"
        f" speed first hour {speeds[0]:.0f}x, median {sorted(speeds)[len(speeds) // 2]:.0f}x,"
        f" last hour {speeds[-1]:.0f}x; total {time.perf_counter() - began:.0f} s"
    )


if __name__ == "__main__":
    main()
