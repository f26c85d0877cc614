"""The replay's HTML report: one self-contained file (charts embedded as PNG, no CDN).

Charts: demand, capacity and prewarm over time per policy; pods waiting over time; and the
cost-wait trade-off (GPU-hours against P95 and mean wait) with the static sweep as a curve. Where
each policy stands against static headroom at the same GPU-hours is said in words first. The
frontier's report (``render_frontier``) holds its curves on the evaluation window and its chosen
points in words.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from forecaster.simulation.metrics import ReplayMetrics
from forecaster.simulation.twin import TwinRecord


@dataclass(frozen=True)
class ReportRun:
    """One policy's result as the report needs it."""

    policy: str
    metrics: ReplayMetrics
    record: TwinRecord


def _png(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _hourly(values: np.ndarray) -> np.ndarray:
    hours = values.size // 60
    return np.asarray(values[: hours * 60].reshape(hours, 60).mean(axis=1))


def timeline_chart(runs: Sequence[ReportRun], *, window: tuple[float, float]) -> str:
    """Demand, capacity and prewarm over time, one panel per policy."""
    figure = Figure(figsize=(12, 2.2 * len(runs)))
    axes = figure.subplots(len(runs), 1, sharex=True, squeeze=False)
    for ax, run in zip(axes[:, 0], runs, strict=True):
        rec = run.record
        days = (rec.minute_start + 3600 * np.arange(_hourly(rec.demand).size) - window[0]) / 86400
        ax.plot(days, _hourly(rec.capacity), color="#4477aa", lw=0.8, label="capacity (GPUs)")
        ax.plot(days, _hourly(rec.demand), color="#222222", lw=0.8, label="requested (GPUs)")
        ax.fill_between(
            days, 0, _hourly(rec.prewarm), color="#ee6677", alpha=0.5, label="prewarm (GPUs)"
        )
        ax.set_ylabel(run.policy)
        ax.axvline(0, color="grey", lw=0.5, ls="--")
    axes[0, 0].legend(loc="upper right", fontsize=8)
    axes[-1, 0].set_xlabel("days since the end of warm-up (left of the dashed line: warm-up)")
    return _png(figure)


def waiting_chart(runs: Sequence[ReportRun], *, window: tuple[float, float]) -> str:
    """Pods waiting for GPUs over time (hourly mean)."""
    figure = Figure(figsize=(12, 3))
    ax = figure.subplots()
    for run in runs:
        rec = run.record
        days = (rec.minute_start + 3600 * np.arange(_hourly(rec.waiting).size) - window[0]) / 86400
        ax.plot(days, _hourly(rec.waiting), lw=0.8, label=run.policy)
    ax.set_ylabel("pods waiting")
    ax.set_xlabel("days since the end of warm-up")
    ax.legend(fontsize=8)
    return _png(figure)


def tradeoff_chart(runs: Sequence[ReportRun], sweep: Sequence[ReportRun]) -> str:
    """GPU-hours against P95 and mean wait: where each policy sits against the static curve."""
    figure = Figure(figsize=(12, 4))
    p95, mean = figure.subplots(1, 2)
    for ax, field, label in (
        (p95, "p95_wait_s", "P95 wait (s)"),
        (mean, "mean_wait_s", "mean wait (s)"),
    ):
        if sweep:
            xs = [r.metrics.gpu_hours / 1000 for r in sweep]
            ys = [getattr(r.metrics, field) for r in sweep]
            ax.plot(xs, ys, "-o", color="#aaaaaa", ms=3, label="static K (sweep)")
            for r, x, y in zip(sweep, xs, ys, strict=True):
                ax.annotate(r.policy.removeprefix("static:"), (x, y), fontsize=7, color="#777777")
        for run in runs:
            ax.plot(
                run.metrics.gpu_hours / 1000,
                getattr(run.metrics, field),
                "o",
                ms=7,
                label=run.policy,
            )
        ax.set_xlabel("GPU-hours provisioned (thousands)")
        ax.set_ylabel(label)
    p95.legend(fontsize=8)
    return _png(figure)


_COLUMNS = (
    ("p50_wait_s", "P50 wait s", "{:.0f}"),
    ("p95_wait_s", "P95 wait s", "{:.0f}"),
    ("p99_wait_s", "P99 wait s", "{:.0f}"),
    ("mean_wait_s", "mean wait s", "{:.1f}"),
    ("share_waiting_over_5min", "waiting > 5 min", "{:.1%}"),
    ("gpu_hours", "GPU-hours", "{:,.0f}"),
    ("idle_gpu_hours", "idle GPU-h", "{:,.0f}"),
    ("prewarm_gpu_hours_used", "prewarm used GPU-h", "{:,.0f}"),
    ("prewarm_gpu_hours_expired", "prewarm unused GPU-h", "{:,.0f}"),
    ("cost", "cost $ on-demand", "{:,.0f}"),
    ("cost_spot", "cost $ spot", "{:,.0f}"),
    ("cap_breaches", "cap breaches", "{}"),
    ("handoffs", "hand-offs", "{}"),
)


def metrics_table(runs: Sequence[ReportRun]) -> str:
    """The figures as an HTML table."""
    head = "".join(f"<th>{html.escape(label)}</th>" for _, label, _ in _COLUMNS)
    rows = []
    for run in runs:
        cells = "".join(
            f"<td>{fmt.format(getattr(run.metrics, key))}</td>" for key, _, fmt in _COLUMNS
        )
        rows.append(f"<tr><th>{html.escape(run.policy)}</th>{cells}</tr>")
    return f"<table><tr><th>policy</th>{head}</tr>{''.join(rows)}</table>"


def render(
    runs: Sequence[ReportRun],
    sweep: Sequence[ReportRun],
    *,
    title: str,
    window: tuple[float, float],
    notes: Sequence[str],
    comparison: Sequence[str] = (),
) -> str:
    """The whole report as one HTML document; ``comparison``: where each policy stands against
    static headroom at the same GPU-hours, in words, said before any chart."""
    charts = [
        ("Demand, capacity and prewarm", timeline_chart(runs, window=window)),
        ("Pods waiting for GPUs", waiting_chart(runs, window=window)),
        ("Cost against wait", tradeoff_chart(runs, sweep)),
    ]
    images = "".join(
        f"<h2>{html.escape(name)}</h2>"
        f"<img alt='{html.escape(name)}' src='data:image/png;base64,{data}'>"
        for name, data in charts
    )
    items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    said = "".join(f"<li>{html.escape(c)}</li>" for c in comparison)
    compared = (
        f"<h2>Against static headroom at the same GPU-hours</h2><ul>{said}</ul>" if said else ""
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>"
        "body{font-family:system-ui,sans-serif;margin:2em;max-width:1300px}"
        "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;"
        "text-align:right}img{max-width:100%}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><ul>{items}</ul>{compared}"
        f"{metrics_table([*runs, *sweep])}{images}"
        "</body></html>"
    )


def frontier_chart(document: dict[str, Any]) -> str:
    """The frontier's evaluation-window curves (``simulation.frontier``'s JSON): GPU-hours
    against P95 and mean wait for static, predictive and burst, with reactive, the oracle and
    the predictive points chosen on the tuning window circled."""
    figure = Figure(figsize=(12, 4))
    p95, mean = figure.subplots(1, 2)
    for ax, field, label in (
        (p95, "p95_wait_s", "P95 wait (s)"),
        (mean, "mean_wait_s", "mean wait (s)"),
    ):
        for curve, style in (("static", "-o"), ("predictive", "o"), ("burst", "-s")):
            rows = sorted(document[curve], key=lambda r: r["gpu_hours"])
            ax.plot(
                [r["gpu_hours"] / 1000 for r in rows],
                [r[field] for r in rows],
                style,
                ms=4,
                label=curve,
            )
        for single in ("reactive", "oracle"):
            row = document[single]
            ax.plot(row["gpu_hours"] / 1000, row[field], "*", ms=10, label=single)
        chosen = sorted(document["chosen"].items(), key=lambda item: float(item[0]))
        ax.plot(
            [row["gpu_hours"] / 1000 for _, row in chosen],
            [row[field] for _, row in chosen],
            "o",
            ms=11,
            mfc="none",
            color="black",
            label="predictive chosen (" + ", ".join(f"+{b} %" for b, _ in chosen) + ")",
        )
        ax.set_xlabel("GPU-hours provisioned (thousands)")
        ax.set_ylabel(label)
    p95.legend(fontsize=8)
    return _png(figure)


def render_frontier(
    document: dict[str, Any], *, title: str, notes: Sequence[str], said: Sequence[str]
) -> str:
    """The frontier as one HTML document: what was run, the chosen points in words
    (``frontier.said``), then the curves."""
    items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    words = "".join(f"<li>{html.escape(s)}</li>" for s in said)
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>"
        "body{font-family:system-ui,sans-serif;margin:2em;max-width:1300px}img{max-width:100%}"
        f"</style></head><body><h1>{html.escape(title)}</h1><ul>{items}</ul>"
        "<h2>Against static headroom at the same GPU-hours (evaluation window)</h2>"
        f"<ul>{words}</ul>"
        "<h2>Cost against wait (evaluation window)</h2>"
        f"<img alt='cost against wait' src='data:image/png;base64,{frontier_chart(document)}'>"
        "</body></html>"
    )


def render_partial(lines: Sequence[str], *, title: str, notes: Sequence[str]) -> str:
    """The page of an interrupted run (marked partial): what was run and each finished
    replay's figures, one line each - no choice, no verdict, no chart."""
    items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    rows = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)} (partial)</title></head><body>"
        f"<h1>{html.escape(title)} - partial: interrupted</h1><ul>{items}</ul>"
        f"<h2>Replays that finished</h2><ul>{rows}</ul></body></html>"
    )
