"""The daemon against a real cluster: APScheduler jobs, leader election, endpoint, shutdown.

Jobs (``BackgroundScheduler``, ``coalesce``, ``max_instances=1``, misfire grace of one period):

* ``lease`` every third of the Lease duration: acquire or renew leadership;
* ``reconcile`` at start and every ``reconcile_every_seconds``: one tick; only the leader acts,
  every replica forecasts and serves the endpoint.

With a ``PodWatch`` (``watch_pods``, the default), a new pending GPU pod also wakes a tick at
once - at most one every ``MIN_WAKE_SECONDS``, and one more after a tick that ran meanwhile -
so the daemon decides within about a second of new demand instead of up to one interval.
(Ticks never overlap: ``Daemon`` serializes them.)

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
from dataclasses import dataclass, field
from datetime import UTC, datetime

import uvicorn
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from forecaster.actuators.coordination.leases import LEASE_SECONDS, LeaderElector
from forecaster.actuators.observe.pod_watch import PodWatch
from forecaster.core.policy import MIN_WAKE_SECONDS
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
    watch: PodWatch | None = None
    """The pod watch: the observer's cache of other pods and the cue to tick early."""
    _woken: threading.Event = field(default_factory=threading.Event)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _tick_began: float = -float("inf")
    _waker: threading.Thread | None = None

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
        self._tick_began = time.monotonic()
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
        if self.watch is not None:
            self.watch.on_arrival = self.wake
            self.watch.start()
            self._waker = threading.Thread(target=self._wake_loop, name="wake", daemon=True)
            self._waker.start()
        return scheduler

    def wake(self, pod: str) -> None:
        """The pod watch saw ``pod``, a new pending GPU pod: tick soon (``_wake_loop``)."""
        log.debug("new pending GPU pod %s: waking the reconcile loop", pod)
        self._woken.set()

    def _wake_loop(self) -> None:
        """Tick whenever woken, no sooner than ``MIN_WAKE_SECONDS`` after the last tick began.
        A wake during a tick is kept (the event stays set) and ticks again after it."""
        while not self._stopping.is_set():
            if not self._woken.wait(timeout=1.0):
                continue
            wait = self._tick_began + MIN_WAKE_SECONDS - time.monotonic()
            if wait > 0 and self._stopping.wait(wait):
                return
            self._woken.clear()
            log.info("new pending GPU pods: deciding now, not at the next interval")
            self.reconcile()

    def stop(self) -> None:
        """Wait for a running tick, stop the jobs and the watch, give the Lease up."""
        self._stopping.set()
        if self.watch is not None:
            self.watch.stop()
        if self._waker is not None:
            self._waker.join(timeout=60)
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
