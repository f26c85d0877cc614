"""Pod watch benchmark: what ``watch_pods`` buys, against listing every pod at every tick.

The daemon (``build_cluster_service``, the real ``kubernetes`` client over HTTP) runs against
the API server double holding ``--pods`` live pods of other teams (CPU pods in 20 namespaces)
next to one busy GPU pool. Printed, with the watch and without it:

* **pod read**: the time of one tick's read of the live pods (median of 20; the double's own
  filtering over every stored pod is in it, whatever is sent) and how many pod objects the API
  server had to send for it;
* **memory**: the MiB the live pods take as listed, and as the watch's cache keeps them;
* **decision latency**: ``--arrivals`` GPU pods are created ``--spacing`` seconds apart while
  the daemon runs with its production 15 s interval; for each, the time from its creation to
  the start of the next tick (mean, P95, max).

Run:
``.venv/bin/python -m bench.performance.pod_watch [--pods 2000] [--arrivals 12] [--spacing 4.1]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.observe.pod_watch import LIVE_PODS, NOT_OURS, live_pods, slim
from forecaster.app.build import build_cluster_service
from forecaster.reconcile.records import TickRecord
from forecaster.service.clock import FakeClock
from forecaster.service.scheduler import ClusterService
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history, settings
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.kubeapi.store import matches_fields, matches_labels
from forecaster.testing.objects import dressed


def background(api: KubeApiDouble, count: int) -> None:
    """``count`` running CPU pods of other teams (what a real cluster is mostly made of), as a
    real API server serves them (managedFields, environment, volumes, statuses)."""
    for i in range(count):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"web-{i}", "namespace": f"team-{i % 20}"},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            "status": {"phase": "Running"},
        }
        api.put("pods", dressed(pod, index=i))


def cache_mib(kube: Kube) -> tuple[float, float]:
    """MiB the live pods take in memory as listed, and as the watch keeps them (``slim``)."""
    tracemalloc.start()
    listed = kube.list_pods(labels=NOT_OURS, fields=LIVE_PODS)
    full = tracemalloc.get_traced_memory()[0]
    kept = [slim(p) for p in listed]
    del listed
    slimmed = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert kept
    return full / 2**20, slimmed / 2**20


def service(kube: Kube, scratch: Path, *, watch: bool) -> ClusterService:
    config = settings(scratch, watch_pods=watch)
    clock = FakeClock(datetime.fromtimestamp(T0, tz=UTC))
    built = build_cluster_service(config, kube, identity=f"bench-{watch}", clock=clock)
    built.daemon.reconciler.source = LiveSource(T0 - 2 * 86400, calm_history())
    return built


def matching(api: KubeApiDouble, query: dict[str, str]) -> list[dict[str, object]]:
    """The pods a list with this query returns."""
    return [
        p
        for p in api.objects("pods")
        if matches_labels(p["metadata"].get("labels", {}), query.get("labelSelector"))
        and matches_fields(p, query.get("fieldSelector"))
    ]


def read_cost(api: KubeApiDouble, kube: Kube, built: ClusterService) -> tuple[float, int]:
    """(median seconds of one tick's pod read, pod objects the server sent for it)."""
    times: list[float] = []
    sent: list[int] = []
    for _ in range(20):
        before = len(api.requests)
        began = time.perf_counter()
        live_pods(kube, built.watch)
        times.append(time.perf_counter() - began)
        lists = [r for r in api.requests[before:] if r.path == "/api/v1/pods"]
        sent.append(sum(len(matching(api, r.query)) for r in lists))
    return statistics.median(times), int(statistics.median(sent))


def latencies(
    sim: ClusterSim, built: ClusterService, *, arrivals: int, spacing: float
) -> list[float]:
    """Seconds from each new GPU pod's creation to the start of the next tick."""
    starts: list[float] = []
    tick = built.daemon.reconcile

    def timed(now: int) -> TickRecord | None:
        starts.append(time.monotonic())
        return tick(now)

    built.daemon.reconcile = timed  # type: ignore[method-assign]
    built.start()
    try:
        time.sleep(3)  # the first tick (at start) and the watch's first list
        created = []
        for i in range(arrivals):
            created.append(time.monotonic())
            sim.submit(f"arrival-{i}-{id(built)}", POOL, 8)
            time.sleep(spacing)
        time.sleep(16)  # the last one's tick, even at the interval
    finally:
        built.stop()
    return [min(s for s in starts if s >= c) - c for c in created]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--arrivals", type=int, default=12)
    parser.add_argument("--spacing", type=float, default=4.1)
    args = parser.parse_args()
    print(f"API double: {args.pods} live pods of other teams, one busy 8-GPU pool")
    print(f"{'':>12} {'pod read':>9} {'pods sent':>10} {'latency mean':>13} {'P95':>6} {'max':>6}")
    for watch in (False, True):
        with KubeApiDouble() as api, tempfile.TemporaryDirectory() as scratch:
            api.clock = float(T0)
            sim = ClusterSim(api)
            sim.busy_pool(POOL)
            background(api, args.pods)
            kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
            built = service(kube, Path(scratch), watch=watch)
            if built.watch is not None:  # in sync (listed); start() then watches from there
                built.watch.relist()
            seconds, sent = read_cost(api, kube, built)
            if watch:
                full, slimmed = cache_mib(kube)
            waits = latencies(sim, built, arrivals=args.arrivals, spacing=args.spacing)
        name = "watch" if watch else "list"
        print(
            f"{name:>12} {seconds * 1000:>7.0f}ms {sent:>10} {np.mean(waits):>12.2f}s"
            f" {np.percentile(waits, 95):>5.2f}s {max(waits):>5.2f}s"
        )
    print(
        f"memory of the {args.pods} pods: {full:.1f} MiB as listed (held during each tick's"
        f" read), {slimmed:.1f} MiB in the watch's cache (slim, held all along)"
    )


if __name__ == "__main__":
    main()
