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
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import uvicorn

from forecaster.core.series import from_epoch_seconds
from forecaster.durations import DAY
from forecaster.errors import ConfigError
from forecaster.forecasting.artifacts import ArtifactStore
from forecaster.forecasting.training import train_pool
from forecaster.service import app
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app, ensure_port_free
from forecaster.settings import Settings
from forecaster.simulation.live import LiveTwin
from forecaster.simulation.twin import TwinConfig
from forecaster.sources.files import read_job_trace

log = logging.getLogger(__name__)
REAL_STEP_SECONDS = 0.1


@dataclass
class EmbeddedRun:
    """A daemon wired to a live twin (built by ``build_embedded``)."""

    settings: Settings
    twin: LiveTwin
    daemon: Daemon
    store: ArtifactStore
    pool: str
    end: float

    def train(self) -> str | None:
        """Backtest, select and publish a model on the demand the twin showed so far."""
        now = int(self.twin.now)
        pool = self.settings.pool(self.pool)
        history = int(self.settings.forecast.history_days * DAY)
        series, report = self.twin.fetch(self.pool, start=now - history, end=now, step_seconds=60)
        plan = app.training_plan(self.settings, pool)
        result = train_pool(
            series,
            report,
            plan=plan,
            store=self.store,
            created=from_epoch_seconds(now).strftime("%Y%m%dT%H%M%SZ"),
        )
        log.info("[twin %s] retrain: %s", _simulated(now), result.message)
        return result.version

    def step(self, until: float) -> None:
        """Advance simulated time to ``until``, ticking the daemon and retraining on schedule."""
        every = self.settings.reconcile_every_seconds
        retrain = self.settings.twin.retrain_every_days * DAY
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


def build_embedded(settings: Settings, *, models_dir: Path | None = None) -> EmbeddedRun:
    """Load the trace, warm the twin up, train the first model and wire the daemon."""
    cfg = settings.twin
    try:
        epoch = int(datetime.fromisoformat(cfg.epoch).timestamp())
    except ValueError:
        raise ConfigError(f"twin.epoch: bad ISO 8601 time {cfg.epoch!r}") from None
    pool = settings.pool(cfg.pool)
    jobs = read_job_trace(cfg.jobs, epoch=epoch)
    start, end = epoch + cfg.start_day * DAY, epoch + cfg.end_day * DAY
    twin_config = TwinConfig(
        pool=pool.name,
        gpus_per_node=pool.gpus_per_node,
        provision_seconds=pool.lead_time.provisioning_seconds,
        image_pull_seconds=pool.lead_time.image_pull_seconds,
        placeholder_ttl_seconds=settings.planning.placeholders.ttl_seconds,
        nodepool_limit_gpus=cfg.nodepool_limit_gpus,
    )
    twin = LiveTwin(jobs, twin_config, start=start, end=end)
    began = time.perf_counter()
    twin.advance_to(start + cfg.warmup_days * DAY)
    log.info(
        "twin warm-up: %.0f simulated days in %.1f s", cfg.warmup_days, time.perf_counter() - began
    )
    store_dir = models_dir or Path(tempfile.mkdtemp(prefix="forecaster-twin-models-"))
    one_pool = settings.model_copy(
        update={
            "pools": (pool,),
            "models_dir": store_dir,
            "forecast": settings.forecast.model_copy(update={"models": cfg.models}),
        }
    )
    reconciler = app.build_reconciler(one_pool, source=twin, observer=twin.observe, actuator=twin)
    daemon = Daemon(reconciler=reconciler, slo=app.slo_policy(one_pool), pools=(pool.name,))
    run = EmbeddedRun(one_pool, twin, daemon, ArtifactStore(store_dir), pool.name, end)
    run.train()
    run._last_train = twin.now
    return run


def _simulated(at: float) -> str:
    """Simulated time as the demo prints it (logs carry wall time; this is the twin's clock)."""
    return from_epoch_seconds(int(at)).strftime("%Y-%m-%d %H:%MZ")


def summary(run: EmbeddedRun) -> str:
    """One line about the latest tick, for the terminal."""
    record = run.daemon.last
    assert record is not None
    pool_plan = record.plan.pool(run.pool)
    view = record.pools[run.pool]
    snap = view.snapshot
    demand = f"{snap.real_demand_gpus} GPUs requested" if snap else "demand unknown"
    p95 = (
        f"{view.demand.upper_label} {view.demand.upper_gpus:.0f}" if view.demand else "no forecast"
    )
    when = _simulated(record.at)
    return (
        f"[twin {when}] {run.pool}: {pool_plan.mode.value}, {demand}, {p95},"
        f" prewarm {pool_plan.target_gpus} GPUs ({view.model} {view.model_version})"
    )


def serve_embedded(settings: Settings, *, port: int, duration_seconds: float | None) -> int:
    """Run the embedded default until Ctrl-C, ``duration_seconds`` or the end of the trace."""
    ensure_port_free("127.0.0.1", port)
    run = build_embedded(settings)
    # at hundreds of ticks per real second the per-tick decision line would flood the terminal:
    # keep warnings (hand-offs, errors) and print a summary every simulated hour instead
    logging.getLogger("forecaster.reconcile.loop").setLevel(logging.WARNING)
    server = uvicorn.Server(
        uvicorn.Config(create_app(run.daemon), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    print(
        f"forecaster: daemon on the cluster twin (pool {run.pool}, {settings.twin.speed:g}x speed);"
        f" inspection endpoint at http://127.0.0.1:{port}/  (Ctrl-C to stop)",
        flush=True,
    )
    began = time.monotonic()
    next_summary = run.twin.now
    try:
        while run.twin.now < run.end:
            if duration_seconds is not None and time.monotonic() - began >= duration_seconds:
                break
            tick_began = time.monotonic()
            run.step(run.twin.now + settings.twin.speed * REAL_STEP_SECONDS)
            if run.twin.now >= next_summary and run.daemon.last is not None:
                print(summary(run), flush=True)
                next_summary = run.twin.now + 3600
            time.sleep(max(0.0, REAL_STEP_SECONDS - (time.monotonic() - tick_began)))
    except KeyboardInterrupt:
        print("forecaster: stopping", flush=True)
    finally:
        server.should_exit = True
        thread.join(timeout=5)
    return 0
