"""The embedded default: the whole daemon against the cluster twin, on an accelerated clock.

``forecaster run`` with no cluster: the twin replays the sample job trace (the ITP jobs), its
first ``warmup_days`` are simulated at full speed, a model is trained on the demand the twin
showed (backtest + selection, as the weekly CronJob does) and published to a scratch model
store; then simulated time runs ``speed`` times faster than real time while the daemon ticks
every ``reconcile_every_seconds`` of simulated time, retrains every ``retrain_every_days``
(published models are hot-reloaded) and serves the inspection endpoint on 127.0.0.1:<port>.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import uvicorn

from forecaster.core.operating_point import OperatingPoint
from forecaster.core.series import DemandSeries, from_epoch_seconds
from forecaster.forecasting.artifacts import ArtifactStore
from forecaster.forecasting.training import TrainingPlan, train_pool
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.simulation.live import LiveTwin
from forecaster.sources.inputs import gather

log = logging.getLogger(__name__)
REAL_STEP_SECONDS = 0.1


@dataclass
class EmbeddedRun:
    """A daemon wired to a live twin (built by ``app.build.build_embedded``)."""

    twin: LiveTwin
    daemon: Daemon
    store: ArtifactStore
    pool: str
    end: float
    training: TrainingPlan
    history_seconds: int
    """Demand each retrain sees (``forecast.history_days``)."""
    reconcile_every_seconds: int
    retrain_every_seconds: int
    speed: float
    """Simulated seconds per real second when served."""
    choose_point: Callable[[DemandSeries], OperatingPoint | None] = lambda _: None
    """The training job's operating-point choice on the history (``app.training.choose_point``;
    None without a budget)."""

    def train(self) -> str | None:
        """Backtest, select and publish a model (and the arrivals model) on the demand and the
        pods created that the twin showed so far."""
        now = int(self.twin.now)
        inputs = gather(
            self.twin, self.pool, start=now - self.history_seconds, end=now, step_seconds=60
        )
        result = train_pool(
            inputs.demand,
            inputs.report,
            plan=self.training,
            store=self.store,
            created=from_epoch_seconds(now).strftime("%Y%m%dT%H%M%SZ"),
            arrivals=inputs.arrivals,
            operating_point=self.choose_point(inputs.demand),
        )
        log.info("[twin %s] retrain: %s", _simulated(now), result.message)
        return result.version

    def step(self, until: float) -> None:
        """Advance simulated time to ``until``, ticking the daemon and retraining on schedule."""
        every = self.reconcile_every_seconds
        retrain = self.retrain_every_seconds
        t = self.twin.now
        while t < until:
            t = min(until, (t // every + 1) * every)
            self.twin.advance_to(t)
            if t % every == 0:
                self.daemon.reconcile(int(t))
            if t - self._last_train >= retrain:
                self.train()
                self._last_train = t

    _last_train: float = 0.0


def _simulated(at: float) -> str:
    """Simulated time as the demo prints it (logs carry wall time; this is the twin's clock)."""
    return from_epoch_seconds(int(at)).strftime("%Y-%m-%d %H:%MZ")


BINDING = ("capped by", "no new prewarm", "refusing", "stale", "forecast-only")
"""Reason prefixes of a plan that held prewarm below its need (``core.planner``)."""


def binding(reasons: tuple[str, ...]) -> str | None:
    """The last reason that held the prewarm down (the one that bound), if any."""
    held = [r for r in reasons if any(word in r for word in BINDING)]
    return held[-1] if held else None


def summary(run: EmbeddedRun, *, speed: float | None = None) -> str:
    """One line about the latest tick, for the terminal: the plan, what bound it when it
    prewarms nothing while it needs some, the share of the last day's prewarm that expired
    unused, and the speed measured (simulated seconds per real second)."""
    record = run.daemon.last
    assert record is not None
    pool_plan = record.plan.pool(run.pool)
    view = record.pools[run.pool]
    snap = view.snapshot
    demand = f"{snap.real_demand_gpus} GPUs requested" if snap else "demand unknown"
    p95 = "no forecast"
    if view.demand is not None:
        covers = "peak within the window" if view.demand.peak else "at lead time"
        p95 = f"{view.demand.upper_label} {view.demand.upper_gpus:.0f} {covers}"
    when = _simulated(record.at)
    line = (
        f"[twin {when}] {run.pool}: {pool_plan.mode.value}, {demand}, {p95},"
        f" prewarm {pool_plan.target_gpus} GPUs"
        f" ({view.demand.model if view.demand else view.model}, {view.model} {view.model_version})"
    )
    if pool_plan.target_gpus == 0 and pool_plan.needed_gpus > 0:
        why = binding(pool_plan.reasons) or f"mode {pool_plan.mode.value}"
        line += f"; needs {pool_plan.needed_gpus}, held at 0 by: {why}"
    spend = run.daemon.spend(run.pool)
    if spend.prewarm_gpu_hours > 0:
        share = min(spend.wasted_gpu_hours, spend.prewarm_gpu_hours) / spend.prewarm_gpu_hours
        line += f"; 24 h prewarm {spend.prewarm_gpu_hours:.0f} GPU-h, {share:.0%} expired unused"
    if speed is not None:
        line += f"; running {speed:.0f}x"
    return line


def serve_embedded(run: EmbeddedRun, *, port: int, duration_seconds: float | None) -> int:
    """Run the embedded default until Ctrl-C, ``duration_seconds`` or the end of the trace."""
    # at hundreds of ticks per real second the per-tick decision line would flood the terminal:
    # keep warnings (hand-offs, errors) and print a summary every simulated hour instead
    logging.getLogger("forecaster.reconcile.loop").setLevel(logging.WARNING)
    server = uvicorn.Server(
        uvicorn.Config(create_app(run.daemon), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    print(
        f"forecaster: daemon on the cluster twin (pool {run.pool}, asking {run.speed:g}x speed;"
        " each hourly line says the speed measured); inspection endpoint at"
        f" http://127.0.0.1:{port}/  (Ctrl-C to stop)",
        flush=True,
    )
    began = time.monotonic()
    next_summary = run.twin.now
    last_summary = (time.monotonic(), run.twin.now)
    try:
        while run.twin.now < run.end:
            if duration_seconds is not None and time.monotonic() - began >= duration_seconds:
                break
            tick_began = time.monotonic()
            run.step(run.twin.now + run.speed * REAL_STEP_SECONDS)
            if run.twin.now >= next_summary and run.daemon.last is not None:
                wall, simulated = time.monotonic(), run.twin.now
                measured = (simulated - last_summary[1]) / max(1e-9, wall - last_summary[0])
                speed = measured if simulated > last_summary[1] else None
                print(summary(run, speed=speed), flush=True)
                last_summary = (wall, simulated)
                next_summary = run.twin.now + 3600
            time.sleep(max(0.0, REAL_STEP_SECONDS - (time.monotonic() - tick_began)))
    finally:  # Ctrl-C unwinds to ``cli.main``: one line, exit 130
        server.should_exit = True
        thread.join(timeout=5)
    return 0
