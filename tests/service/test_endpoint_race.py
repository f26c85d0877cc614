"""The endpoint reads the daemon's trail while ticks change it: never a 5xx.

Cases: a trail that a tick changes *while* a handler iterates it (deterministic: the first
iteration starts a tick in another thread and gives it time to run) makes no endpoint answer
5xx - the handlers copy under the daemon's view lock, so the tick waits; a hammer of 4 client
threads over every endpoint of the embedded default, served by uvicorn while the twin ticks at
full speed (>= 2,000 requests during >= 50 ticks), sees zero 5xx.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import uvicorn
from fastapi.testclient import TestClient

from forecaster.app.build import build_embedded
from forecaster.service.daemon import Daemon, TrailPoint
from forecaster.service.http import create_app
from forecaster.settings import load_settings
from forecaster.testing.fakes import POOL, T0

ROOT = Path(__file__).resolve().parents[2]
ENDPOINTS = [
    "/healthz",
    "/readyz",
    "/metrics",
    "/api/v1/plan",
    "/api/v1/status",
    f"/api/v1/forecast?pool={POOL}",
    f"/api/v1/history?pool={POOL}",
    "/",
]


class TickingTrail(deque[TrailPoint]):
    """A trail whose every iteration lets a tick run in another thread for up to 0.2 s."""

    daemon: Daemon | None = None
    at = T0

    def __iter__(self) -> Iterator[TrailPoint]:
        items = super().__iter__()
        first = next(items, None)
        if first is None:
            return
        yield first
        if self.daemon is not None:
            TickingTrail.at += 60
            tick = threading.Thread(
                target=self.daemon.reconcile, args=(TickingTrail.at,), daemon=True
            )
            tick.start()
            tick.join(timeout=0.2)  # a tick blocked on the view lock: fine, it runs afterwards
        yield from items


def test_a_trail_changed_during_iteration_never_fails_an_endpoint(daemon: Daemon) -> None:
    for minute in range(3):
        daemon.reconcile(T0 + 60 * minute)
    TickingTrail.at = T0 + 120
    trail = TickingTrail(daemon.trail)
    daemon.trail = trail
    trail.daemon = daemon
    client = TestClient(create_app(daemon))
    for path in ENDPOINTS:
        response = client.get(path)
        assert response.status_code < 500, (path, response.text[:300])
    trail.daemon = None
    assert daemon.ticks > 3 + len(ENDPOINTS) // 2  # the ticks did run, around the reads


def test_a_hammer_over_every_endpoint_during_ticks_sees_no_5xx(tmp_path: Path) -> None:
    settings = load_settings(ROOT / "config" / "forecaster.yaml", env={})
    twin = settings.twin.model_copy(update={"warmup_days": 8, "models": ("persistence",)})
    settings = settings.model_copy(
        update={
            "twin": twin,
            "forecast": settings.forecast.model_copy(update={"min_history_days": 7}),
        }
    )
    run = build_embedded(settings, models_dir=tmp_path)
    run.step(run.twin.now + 600)  # ready
    server = uvicorn.Server(  # the real HTTP path: uvicorn's threads, as deployed
        uvicorn.Config(create_app(run.daemon), host="127.0.0.1", port=0, log_level="warning")
    )
    served = threading.Thread(target=server.run, daemon=True)
    served.start()
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    stop = threading.Event()
    answers: list[tuple[str, int]] = []
    lock = threading.Lock()

    def hammer(offset: int) -> None:
        client = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        i = offset
        while not stop.is_set():
            path = ENDPOINTS[i % len(ENDPOINTS)]
            client.request("GET", path.replace(f"pool={POOL}", "pool=itp"))
            response = client.getresponse()
            response.read()
            with lock:
                answers.append((path, response.status))
            i += 1
        client.close()

    clients = [threading.Thread(target=hammer, args=(n,)) for n in range(4)]
    ticks_before = run.daemon.ticks
    for client in clients:
        client.start()
    began = time.monotonic()
    try:
        while time.monotonic() - began < 120:
            run.step(run.twin.now + 15 * 10)
            with lock:
                done = len(answers)
            if done >= 2000 and run.daemon.ticks - ticks_before >= 50:
                break
    finally:
        stop.set()
        for client in clients:
            client.join(timeout=30)
        server.should_exit = True
        served.join(timeout=10)
    failures = [(path, status) for path, status in answers if status >= 500]
    print(
        f"hammer: {len(answers)} requests, {run.daemon.ticks - ticks_before} ticks, 5xx {failures}"
    )
    assert len(answers) >= 2000 and run.daemon.ticks - ticks_before >= 50
    assert failures == []
