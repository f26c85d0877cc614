"""Plain-text reports for the terminal: backtest tables, training summaries, query checks."""

from __future__ import annotations

import math
from collections.abc import Sequence

from forecaster.core.policy import Budgets
from forecaster.core.series import iso_utc
from forecaster.durations import format_duration
from forecaster.forecasting.backtest import BacktestSpec, ModelScore
from forecaster.forecasting.selection import Selection
from forecaster.forecasting.training import PoolTraining
from forecaster.reconcile.records import TickRecord


def score_table(
    scores: Sequence[ModelScore], *, quantile: float, baseline: str, selected: str | None
) -> list[str]:
    """One row per model: coverage, pinball, change vs the baseline, headroom, fit time."""
    base = next((s.pinball for s in scores if s.model == baseline), math.nan)
    pct = round(quantile * 100)
    lines = [
        f"  {'model':<16} {'P' + str(pct) + ' coverage':>13} {'pinball':>9} {'vs ' + baseline:>15}"
        f" {'headroom GPUs':>14} {'fit s':>7} {'points':>7}",
    ]
    for s in scores:
        versus = (s.pinball / base - 1) * 100 if base and math.isfinite(base) else math.nan
        mark = "  <- selected" if s.model == selected else ""
        failed = f"  ({s.failures} failed fits)" if s.failures else ""
        lines.append(
            f"  {s.model:<16} {s.coverage:>13.3f} {s.pinball:>9.3f} {versus:>+14.1f}%"
            f" {s.headroom_gpus:>14.1f} {s.mean_fit_seconds:>7.2f} {s.points:>7}{mark}{failed}"
        )
    return lines


def backtest_header(name: str, spec: BacktestSpec) -> str:
    """What was backtested, in one line."""
    every, test = format_duration(spec.origin_every_seconds), format_duration(spec.test_seconds)
    return (
        f"{name}: horizon {format_duration(spec.horizon_seconds)}, origins every"
        f" {every} over the last {test},"
        f" trailing {format_duration(spec.train_seconds)} training window refitted every"
        f" {format_duration(spec.refit_every_seconds)}"
    )


def selection_line(selection: Selection) -> str:
    """Which model was selected and why."""
    return f"  selected: {selection.model} - {selection.reason}"


def training_report(results: Sequence[PoolTraining], *, baseline: str) -> list[str]:
    """The report ``forecaster train`` prints."""
    lines: list[str] = []
    for result in results:
        lines.append(f"pool {result.pool}: {result.status} - {result.message}")
        if result.quality is not None:
            lines.extend(f"  data: {line}" for line in result.quality.describe())
        if result.spec is not None and result.selection is not None:
            lines.append("  " + backtest_header("backtest", result.spec))
            lines.extend(
                score_table(
                    result.scores,
                    quantile=result.spec.quantile,
                    baseline=baseline,
                    selected=result.selection.model,
                )
            )
            lines.append(selection_line(result.selection))
            lines.append(
                f"  final fit {result.fit_seconds:.1f}s, pool total {result.total_seconds:.1f}s"
            )
        lines.append("")
    return lines


def plan_report(record: TickRecord, *, horizons: dict[str, int], budgets: Budgets) -> list[str]:
    """The plan of one tick, a line for every number and the reasons behind it."""
    decision = record.plan
    lines = [f"plan at {iso_utc(decision.at, minutes=True)}"]
    for pool_plan in decision.pools:
        view = record.pools[pool_plan.pool]
        model = f"{view.model} ({view.model_version})" if view.model else "none"
        lines.append(f"pool {pool_plan.pool}: {pool_plan.mode.value}, model {model}")
        if view.demand is not None:
            ahead = format_duration(horizons[pool_plan.pool])
            lines.append(
                f"  forecast from {iso_utc(view.demand.data_end, minutes=True)} for +{ahead}:"
                f" P50 {view.demand.p50_gpus:.1f},"
                f" {view.demand.upper_label} {view.demand.upper_gpus:.1f} GPUs"
            )
        if view.snapshot is not None:
            s = view.snapshot
            limit = "none" if s.nodepool_limit_gpus is None else f"{s.nodepool_limit_gpus} GPUs"
            lines.append(
                f"  cluster: {s.allocatable_gpus} GPUs allocatable, {s.launching_gpus} launching,"
                f" {s.running_gpus} running + {s.pending_gpus} pending requested,"
                f" {s.prewarm_gpus} in placeholders, NodePool limit {limit}"
            )
        lines.append(
            f"  prewarm target {pool_plan.target_gpus} GPUs = {pool_plan.placeholders}"
            f" placeholder(s) x {pool_plan.placeholder_size_gpus} GPUs"
            f" (needed {pool_plan.needed_gpus} before caps)"
            + ("" if pool_plan.acts else " - not acted on")
        )
        lines.extend(f"  - {reason}" for reason in pool_plan.reasons)
        for line in view.quality:
            lines.append(f"  data: {line}")
        for error in record.errors:
            if error.pool == pool_plan.pool:
                lines.append(f"  error ({error.kind}): {error.message}")
    lines.append(
        f"budgets: prewarm {decision.total_target_gpus} of {budgets.max_total_prewarm_gpus} GPUs;"
        f" cost ${decision.cost_per_hour:.2f}/h of ${budgets.max_cost_per_hour:.2f}/h;"
        f" GPU-hours spent in 24h {decision.gpu_hours_spent_last_day:.1f} of"
        f" {budgets.max_prewarm_gpu_hours_per_day:g}"
        f" (each GPU charged {budgets.commitment_seconds / 3600:.2f} h ahead)"
    )
    lines.extend(f"  - {reason}" for reason in decision.reasons)
    return lines
