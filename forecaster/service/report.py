"""Plain-text reports for the terminal: backtest tables and training summaries."""

from __future__ import annotations

import math
from collections.abc import Sequence

from forecaster.forecasting.backtest import BacktestSpec, ModelScore
from forecaster.forecasting.selection import Selection
from forecaster.service.training import PoolTraining


def duration(seconds: float) -> str:
    """900 -> '15m', 86400 -> '1d', 90 -> '90s'."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


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
    return (
        f"{name}: horizon {duration(spec.horizon_seconds)}, origins every"
        f" {duration(spec.origin_every_seconds)} over the last {duration(spec.test_seconds)},"
        f" trailing {duration(spec.train_seconds)} training window refitted every"
        f" {duration(spec.refit_every_seconds)}"
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
