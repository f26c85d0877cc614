"""Replay metrics: what a platform team compares policies on.

Waits are measured for jobs submitted inside the metrics window (warm-up excluded); a job still
waiting at the end counts with the wait it had so far (a lower bound). GPU-hours are clipped to
the window: provisioned (node lifetimes, launching included), used by real jobs, idle, and
placeholder GPU-hours split into used (ended by preemption: a real job took the node) and
expired unused (removed, renewed or still idle).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forecaster.core.operating_point import Candidate
from forecaster.simulation.twin import TwinRecord


@dataclass(frozen=True)
class ReplayMetrics:
    """The per-policy figures of ``forecaster replay`` (JSON keys are the field names)."""

    jobs: int
    mean_wait_s: float
    p50_wait_s: float
    p95_wait_s: float
    p99_wait_s: float
    share_waiting_over_60s: float
    share_waiting_over_5min: float
    gpu_hours: float
    idle_gpu_hours: float
    prewarm_gpu_hours_used: float
    prewarm_gpu_hours_expired: float
    cost: float
    cost_spot: float
    cap_breaches: int
    handoffs: int


def as_candidate(quantile: float, metrics: ReplayMetrics, *, floor_gpus: int = 0) -> Candidate:
    """A replayed point as the operating-point choice weighs it (``core.operating_point``)."""
    return Candidate(
        quantile,
        floor_gpus=floor_gpus,
        gpu_hours=metrics.gpu_hours,
        mean_wait_s=metrics.mean_wait_s,
        p95_wait_s=metrics.p95_wait_s,
        share_waiting_over_5min=metrics.share_waiting_over_5min,
        cap_breaches=metrics.cap_breaches,
    )


def _overlap(start: np.ndarray, end: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.asarray(np.clip(np.minimum(end, hi) - np.maximum(start, lo), 0, None))


def measure(
    record: TwinRecord,
    *,
    window: tuple[float, float],
    price_on_demand: float,
    price_spot: float,
    handoffs: int = 0,
) -> ReplayMetrics:
    """Metrics of one run over ``window`` (epoch seconds, end exclusive)."""
    lo, hi = window
    inside = (record.job_submit >= lo) & (record.job_submit < hi)
    start = np.where(np.isnan(record.job_start), record.end, record.job_start)
    waits = (start - record.job_submit)[inside]
    # real GPU use inside the window also comes from jobs submitted before it
    started = ~np.isnan(record.job_start)
    used_hours = (
        float(
            np.sum(
                _overlap(
                    record.job_start[started],
                    (record.job_start + record.job_duration)[started],
                    lo,
                    hi,
                )
                * record.job_gpus[started]
            )
        )
        / 3600
    )
    nodes = np.array(record.nodes, dtype=np.float64).reshape(-1, 3)
    provisioned = float(np.sum(_overlap(nodes[:, 0], nodes[:, 1], lo, hi) * nodes[:, 2])) / 3600
    holders = np.array(
        [(a, b, g, float(p)) for a, b, g, p in record.placeholders], dtype=np.float64
    ).reshape(-1, 4)
    held = _overlap(holders[:, 0], holders[:, 1], lo, hi) * holders[:, 2] / 3600
    preempted = holders[:, 3] > 0
    return ReplayMetrics(
        jobs=int(inside.sum()),
        mean_wait_s=float(np.mean(waits)) if waits.size else 0.0,
        p50_wait_s=_pct(waits, 50),
        p95_wait_s=_pct(waits, 95),
        p99_wait_s=_pct(waits, 99),
        share_waiting_over_60s=float(np.mean(waits > 60)) if waits.size else 0.0,
        share_waiting_over_5min=float(np.mean(waits > 300)) if waits.size else 0.0,
        gpu_hours=provisioned,
        idle_gpu_hours=max(0.0, provisioned - used_hours),
        prewarm_gpu_hours_used=float(held[preempted].sum()),
        prewarm_gpu_hours_expired=float(held[~preempted].sum()),
        cost=provisioned * price_on_demand,
        cost_spot=provisioned * price_spot,
        cap_breaches=sum(1 for t in record.breach_times if lo <= t < hi),
        handoffs=handoffs,
    )


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if values.size else 0.0
