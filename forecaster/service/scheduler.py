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
import os
import socket
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import uvicorn
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from forecaster.actuators.kube import Kube
from forecaster.actuators.leases import LEASE_NAME, LEASE_SECONDS, LeaderElector
from forecaster.actuators.model_configmaps import ModelConfigMaps
from forecaster.errors import ForecasterError
from forecaster.service import app
from forecaster.service.clock import Clock, SystemClock
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app, ensure_port_free
from forecaster.settings import Settings

log = logging.getLogger(__name__)
STUCK_AFTER_TICKS = 3
"""No tick completed for this many intervals: the replica is stuck (liveness fails, no renewal)."""


@dataclass
class ClusterService:
    """The wired daemon for one replica."""

    settings: Settings
    daemon: Daemon
    elector: LeaderElector | None
    """None: a forecast-only replica outside the cluster (no Lease, it writes nothing)."""
    clock: Clock
    models: ModelConfigMaps | None = None
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
        if self.models is not None:
            try:
                for line in app.fetch_models(self.settings, self.models):
                    log.info("model installed from its ConfigMap: %s", line)
            except ForecasterError as exc:
                log.error("could not fetch published models, keeping the current: %s", exc)
        self.daemon.reconcile(int(self.now()))

    def start(self) -> BackgroundScheduler:
        """Start both jobs (the first election round runs at once)."""
        self.renew()
        every = self.settings.reconcile_every_seconds
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


def build_cluster_service(
    settings: Settings,
    kube: Kube,
    *,
    identity: str | None = None,
    clock: Clock | None = None,
    elect: bool = True,
) -> ClusterService:
    """Guardrails, reconciler, elector and daemon for one replica.

    ``elect=False`` (a local forecast-only run, which must write nothing): no Lease; the
    replica plans as a leader would, and its dry-run Kube sends no write.
    """
    clock = clock or SystemClock()
    identity = identity or os.environ.get("POD_NAME") or socket.gethostname()
    findings = app.run_guardrails(settings, kube)
    elector = None
    if elect:
        elector = LeaderElector(
            kube,
            namespace=settings.planning.placeholders.namespace,
            name=LEASE_NAME,
            identity=identity,
            wall=lambda: clock.now().timestamp(),
            monotonic=clock.monotonic,
            lease_seconds=LEASE_SECONDS,
        )
        kube.guard = elector.remaining_seconds  # checked immediately before every write
    elif not kube.dry_run:
        raise ForecasterError("a replica without leader election must be dry-run")
    reconciler = app.build_reconciler(settings, kube=kube)
    daemon = Daemon(
        reconciler=reconciler,
        slo=app.slo_policy(settings),
        is_leader=elector.is_leader if elector else lambda: True,
        monotonic=clock.monotonic,
        stuck_after_seconds=STUCK_AFTER_TICKS * settings.reconcile_every_seconds,
        guardrails=[f"{g.code}{f' ({g.pool})' if g.pool else ''}: {g.message}" for g in findings],
        pools=tuple(p.name for p in settings.pools),
    )
    return ClusterService(settings, daemon, elector, clock, models=app.model_mirror(settings, kube))


def serve_cluster(
    settings: Settings,
    *,
    port: int,
    host: str | None = None,
    listen: str = "0.0.0.0",  # in a pod: the Service and the probes must reach it
    elect: bool = True,
    duration_seconds: float | None = None,
) -> int:
    """Run one replica until SIGTERM/Ctrl-C (uvicorn handles the signals) or the duration."""
    ensure_port_free(listen, port)
    service = build_cluster_service(settings, app.connect(settings, host=host), elect=elect)
    service.start()
    log.info(
        "forecaster daemon: %d pool(s), endpoint on %s:%d, dry_run=%s",
        len(settings.pools),
        listen,
        port,
        settings.dry_run,
    )
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
