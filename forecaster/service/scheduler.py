"""The daemon against a real cluster: APScheduler jobs, leader election, endpoint, shutdown.

Jobs (``BackgroundScheduler``, ``coalesce``, ``max_instances=1``, misfire grace of one period):

* ``lease`` every third of the Lease duration: acquire or renew leadership;
* ``reconcile`` at start and every ``reconcile_every_seconds``: one tick; only the leader acts,
  every replica forecasts and serves the endpoint.

Weekly retraining runs as the CronJob (``forecaster train``) and publishes artifacts; each tick
checks the ``CURRENT`` pointer, so new models are hot-reloaded without a restart. On SIGTERM the
endpoint stops, the scheduler waits for a running tick to finish and the Lease is released: the
cluster is left as the last completed tick made it (placeholders keep their TTL, NodePool
patches carry their originals).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import uvicorn
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from forecaster.actuators.leases import LEASE_SECONDS, LeaderElector
from forecaster.errors import ForecasterError
from forecaster.service.clock import Clock
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app

log = logging.getLogger(__name__)
STUCK_AFTER_TICKS = 3
"""No tick completed for this many intervals: the replica is stuck (liveness fails, no renewal)."""
STUCK_AFTER_MIN_SECONDS = 90
"""...and never sooner than this: a 15 s tick that waits out Prometheus retries (3 x 10 s plus
backoff) is slow, not stuck."""


def stuck_after_seconds(reconcile_every_seconds: int) -> int:
    """How long without a completed tick makes a replica stuck."""
    return max(STUCK_AFTER_TICKS * reconcile_every_seconds, STUCK_AFTER_MIN_SECONDS)


@dataclass
class ClusterService:
    """The wired daemon for one replica (built by ``app.build.build_cluster_service``)."""

    daemon: Daemon
    elector: LeaderElector | None
    """None: a forecast-only replica outside the cluster (no Lease, it writes nothing)."""
    clock: Clock
    reconcile_every_seconds: int
    reload_models: Callable[[], list[str]] | None = None
    """With the ConfigMap model store: install newly published models (what changed)."""
    description: str = ""
    """What the start-up log line says about this replica (pools, dry-run)."""
    scheduler: BackgroundScheduler | None = None

    def now(self) -> float:
        """Wall-clock seconds."""
        return self.clock.now().timestamp()

    def renew(self) -> None:
        """The ``lease`` job: renew, unless the reconcile loop is stuck (then let it lapse)."""
        if self.elector is None:
            return
        if self.daemon.stuck():
            self.elector.step_down("no reconcile tick completed recently: letting the Lease lapse")
            return
        self.elector.try_acquire_or_renew()

    def reconcile(self) -> None:
        """The ``reconcile`` job (first fetching newly published models, when shared by
        ConfigMaps: the reconciler then hot-reloads them as usual)."""
        if self.reload_models is not None:
            try:
                for line in self.reload_models():
                    log.info("model installed from its ConfigMap: %s", line)
            except ForecasterError as exc:
                log.error("could not fetch published models, keeping the current: %s", exc)
        self.daemon.reconcile(int(self.now()))

    def start(self) -> BackgroundScheduler:
        """Start both jobs (the first election round runs at once)."""
        self.renew()
        every = self.reconcile_every_seconds
        scheduler = BackgroundScheduler(
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": every}
        )
        if self.elector is not None:
            scheduler.add_job(self.renew, IntervalTrigger(seconds=LEASE_SECONDS / 3), id="lease")
        scheduler.add_job(  # the first tick at once: the endpoint is ready within seconds
            self.reconcile,
            IntervalTrigger(seconds=every),
            id="reconcile",
            next_run_time=datetime.now(tz=UTC),
        )
        scheduler.start()
        self.scheduler = scheduler
        return scheduler

    def stop(self) -> None:
        """Wait for a running tick, stop the jobs, give the Lease up."""
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=True)
        if self.elector is not None:
            self.elector.release()


def serve_cluster(
    service: ClusterService,
    *,
    port: int,
    listen: str = "0.0.0.0",  # in a pod: the Service and the probes must reach it
    duration_seconds: float | None = None,
) -> int:
    """Run one replica until SIGTERM/Ctrl-C (uvicorn handles the signals) or the duration."""
    service.start()
    log.info("forecaster daemon: %s, endpoint on %s:%d", service.description, listen, port)
    server = uvicorn.Server(
        uvicorn.Config(create_app(service.daemon), host=listen, port=port, log_level="warning")
    )
    try:
        if duration_seconds is None:
            server.run()
        else:
            thread = threading.Thread(target=server.run, daemon=True)
            thread.start()
            time.sleep(duration_seconds)
            server.should_exit = True
            thread.join(timeout=10)
    finally:
        service.stop()
    return 0
