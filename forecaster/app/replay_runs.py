"""Running replays: each policy over a trace with a progress bar, and the figures they print.

What the ``replay`` command runs and what the benches run directly (``bench/performance``),
so a bench measures the command's own code path without going through its argument parser.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from tqdm import tqdm

from forecaster.app.replay_policies import replay_policy
from forecaster.core.jobs import JobTrace
from forecaster.durations import DAY
from forecaster.simulation.frontier import in_words
from forecaster.simulation.replay import ReplayResult, ReplaySetup, replay
from forecaster.simulation.workers import Interrupted

KEYS = (  # the metrics a replay document carries per policy
    "p50_wait_s",
    "p95_wait_s",
    "p99_wait_s",
    "mean_wait_s",
    "share_waiting_over_5min",
    "gpu_hours",
    "idle_gpu_hours",
    "prewarm_gpu_hours_used",
    "prewarm_gpu_hours_expired",
    "cost",
    "cost_spot",
    "cap_breaches",
    "handoffs",
)


def run_all(
    names: list[str], jobs: JobTrace, *, setup: ReplaySetup, static_gpus: int
) -> list[ReplayResult]:
    """Each policy in turn, with a progress bar over simulated days; Ctrl-C raises
    ``Interrupted`` with the policies that finished."""
    results: list[ReplayResult] = []
    try:
        for name in names:
            results.append(_run_one(name, jobs, setup=setup, static_gpus=static_gpus))
    except KeyboardInterrupt:
        raise Interrupted(dict(enumerate(results))) from None
    return results


def _run_one(name: str, jobs: JobTrace, *, setup: ReplaySetup, static_gpus: int) -> ReplayResult:
    """One policy replayed, a progress bar over its simulated days on stderr."""
    total_days = (setup.end - setup.start) / DAY
    policy = replay_policy(name, setup, jobs=jobs, static_gpus=static_gpus)
    with tqdm(
        total=round(total_days, 1),
        desc=f"{policy.name:>12}",
        unit="day",
        file=sys.stderr,
        bar_format="{desc} {bar} {n:.0f}/{total:.0f} simulated days [{elapsed}]",
    ) as bar:

        def progress(now: float) -> None:
            day = int((now - setup.start) // DAY)
            if day > bar.n:
                bar.update(day - bar.n)

        return replay(jobs, policy, setup=setup, progress=progress)


def table(results: list[ReplayResult]) -> list[str]:
    """The end-of-run table."""
    lines = [
        f"{'policy':>12} {'P50 s':>7} {'P95 s':>7} {'P99 s':>7} {'mean s':>7} {'>5min':>7}"
        f" {'GPU-h':>9} {'idle GPU-h':>10} {'prewarm used':>12} {'unused':>8} {'cost $':>9}"
        f" {'breaches':>8} {'handoffs':>8}"
    ]
    for r in results:
        m = r.metrics
        lines.append(
            f"{r.policy:>12} {m.p50_wait_s:>7.0f} {m.p95_wait_s:>7.0f} {m.p99_wait_s:>7.0f}"
            f" {m.mean_wait_s:>7.1f} {m.share_waiting_over_5min:>7.1%} {m.gpu_hours:>9,.0f}"
            f" {m.idle_gpu_hours:>10,.0f} {m.prewarm_gpu_hours_used:>12,.0f}"
            f" {m.prewarm_gpu_hours_expired:>8,.0f} {m.cost:>9,.0f} {m.cap_breaches:>8}"
            f" {m.handoffs:>8}"
        )
    return lines


def against_static(results: list[ReplayResult], sweep: list[ReplayResult]) -> list[str]:
    """Each policy but static against the static sweep at the same GPU-hours, in words
    (``simulation.frontier.in_words``): the terminal's and the report's."""
    baseline = next((r for r in results + sweep if r.policy in ("reactive", "static:0")), None)
    curve = [r.metrics for r in sweep]
    return [
        in_words(
            r.policy,
            r.metrics,
            curve,
            reactive_gpu_hours=baseline.metrics.gpu_hours if baseline else None,
        )
        for r in results
        if not r.policy.startswith("static")
    ]


def image_pull_sweep(
    names: list[str], jobs: JobTrace, *, setup: ReplaySetup, pulls: list[float], static_gpus: int
) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """Each policy at each image-pull time: how the lead time moves waiting and GPU-hours.

    GPU-hours are relative to reactive at the same pull time (reactive is run when not asked)."""
    lines = [
        f"{'image pull':>10} {'policy':>12} {'GPU-h vs reactive':>17} {'P95 wait':>9}"
        f" {'mean':>7} {'>5min':>6}"
    ]
    document: dict[str, dict[str, Any]] = {}
    for pull in pulls:
        twin = dataclasses.replace(setup.twin, image_pull_seconds=pull)
        at_pull = dataclasses.replace(setup, twin=twin)
        ran = ["reactive", *(n for n in names if n != "reactive")]
        results = run_all(ran, jobs, setup=at_pull, static_gpus=static_gpus)
        base = results[0].metrics.gpu_hours
        document[f"{pull:g}"] = {}
        for r in results:
            m = r.metrics
            extra = m.gpu_hours / base - 1 if base else 0.0
            lines.append(
                f"{pull:>8.0f} s {r.policy:>12} {extra:>+17.2%} {m.p95_wait_s:>7.0f} s"
                f" {m.mean_wait_s:>5.0f} s {m.share_waiting_over_5min:>6.1%}"
            )
            document[f"{pull:g}"][r.policy] = {k: getattr(m, k) for k in KEYS}
    return lines, document
