"""``check-query``'s report: what each pool's query returns, and from which history.

Apart from ``cli.report`` (which formats training and plans, and imports the model code) so the
one-shot commands stay light.
"""

from __future__ import annotations

from collections.abc import Sequence

from forecaster.core.series import iso_utc
from forecaster.sources.prometheus import QueryCheck


def query_check_report(
    url: str, retention: str | None, *, checks: Sequence[QueryCheck], now: int
) -> list[str]:
    """What Prometheus returns for each pool's query, for a person checking a config."""
    lines = [f"Prometheus {url}: retention {retention or 'not reported by the server'}"]
    for check in checks:
        lines.append(f"pool {check.pool}: {' '.join(check.query.split())}")
        if check.problem and not check.series:
            lines.append(f"  error: {check.problem}")
            continue
        last = f"{check.last_value:g} GPUs" if check.last_value is not None else "none"
        if not check.series:
            last += " (no series: no GPU pod asks now, or the query matches nothing)"
        lines.append(f"  now ({iso_utc(now)}): {check.series} series, value {last}")
        if check.first_sample_at is not None:
            days = (now - check.first_sample_at) / 86400
            lines.append(
                f"  history: {days:.1f} days (first sample {iso_utc(check.first_sample_at)})"
            )
        else:
            lines.append("  history: no sample in the lookback")
        if check.nodeselectors_exported is not None:
            lines.append(f"  reads: {_sources(check, now=now)}")
        if check.recent is not None:
            problems = check.recent.describe() or ["clean"]
            lines.append(
                f"  last day at {check.recent.step_seconds}s: {check.recent.usable_points}"
                f" usable points; {'; '.join(problems)}"
            )
        if check.problem:
            lines.append(f"  error: {check.problem}")
        if check.pods_problem:
            lines.append(f"  pod history: {check.pods_problem}")
        elif check.pods_last_day is not None:
            lines.append(f"  pod history: {check.pods_last_day} GPU pods in the last day")
    return lines


def _sources(check: QueryCheck, *, now: int) -> str:
    """Which demand history a pool reads: the daemon's own export and the bootstrap, in days."""

    def days(first: int | None) -> str:
        return "none" if first is None else f"{(now - first) / 86400:.1f} days"

    own = f"forecaster_observed_demand_gpus {days(check.own_first_at)}"
    if not check.nodeselectors_exported:
        return f"{own}; kube_pod_nodeselectors not exported (kube-state-metrics opt-in)"
    return f"{own}; kube-state-metrics kube_pod_nodeselectors {days(check.nodeselectors_first_at)}"
