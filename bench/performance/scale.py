"""Scale bench: the daemon's cost per tick on a large cluster with 10,000 announced items.

Set-up: the API server double (``forecaster.testing.kubeapi``, the real ``kubernetes`` client
over HTTP) in a process of its own, so what is measured is the daemon's process alone; in it 30
NodePools of 8-GPU nodes, 2,000 Ready nodes, 20,000 running pods (on each node eight 1-GPU pods
and two CPU-only ones) in 40 namespaces, and 10,000 GPU CronJobs (one 8-GPU pod a run; namespace
``i % 40``, pool ``i % 30``) whose daily runs are spread over the next 24 hours - every one
announced and followed at once, ``MAX_IN_FLIGHT`` items in flight. The CronJob controller is
played by the double's process: at each tick every run whose time has come moves its
``lastScheduleTime`` (no pod is made: the items are judged not come, withdrawn and charged). The
scheduler and Karpenter are not played: the placeholder Jobs the daemon creates stay without
pods (the double's scheduler takes minutes a step over 20,000 pods), so what is measured is the
daemon reading the cluster, planning and writing its own objects. The daemon
(``build_cluster_service``: guardrails, Lease, pod watch, every notice source) plans from one
quantile-regression model per pool over the shipped cluster04 demand and ticks every ``--every``
simulated seconds, saving its state at every tick (``save_every_seconds`` 0).

Printed, per tick (the first apart: it lists everything once): the daemon process's CPU and
wall time (p50, p95, max), RSS (after the first tick, at the end, peak), the state ConfigMap's
size and the API requests the daemon sent per tick (reads and writes).

Run: ``.venv/bin/python -m bench.performance.scale [--ticks 20] [--every 30]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from bench.measure import rss_mib
from bench.performance.daemon import ROOT, ShiftedSource, publish_models
from forecaster.actuators.kube import Kube, api_client
from forecaster.app.build import build_cluster_service
from forecaster.durations import DAY
from forecaster.service.clock import FakeClock
from forecaster.settings import Settings
from forecaster.sources.files import CsvSource
from forecaster.testing.kubeapi.cluster import POOL_LABEL, ClusterSim
from forecaster.testing.kubeapi.server import API_PATH, WRITE_METHODS, KubeApiDouble, Request
from forecaster.testing.objects import cronjob

POOLS, NAMESPACES = 30, 40


@dataclass(frozen=True)
class Size:
    """How many of each the double holds (``--scale`` shrinks them alike, for a quick look)."""

    nodes: int = 2000
    pods: int = 20_000
    cronjobs: int = 10_000

    def scaled(self, by: float) -> Size:
        return Size(int(self.nodes * by), int(self.pods * by), int(self.cronjobs * by))


NOW = 1_800_000_000 - 1_800_000_000 % 3600
GPU = "nvidia.com/gpu"


def _stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod(name: str, namespace: str, node: str, pool: str, gpus: int) -> dict[str, Any]:
    requests = {GPU: str(gpus)} if gpus else {"cpu": "1"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "work"}},
        "spec": {
            "nodeName": node,
            "nodeSelector": {POOL_LABEL: pool},
            "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [
                {"name": "c", "image": "ml/train:1", "resources": {"requests": requests}}
            ],
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "ContainersReady", "status": "True"},
            ],
        },
    }


def _run_time(i: int, size: Size) -> int:
    """CronJob ``i``'s daily run: spread over the day after ``NOW``, on whole minutes."""
    return NOW + 120 + (i * DAY // size.cronjobs) // 60 * 60


def _populate(api: KubeApiDouble, sim: ClusterSim, size: Size) -> None:
    for p in range(POOLS):
        sim.add_nodepool(f"gpu-{p}", limit_gpus=4000, consolidate_after="Never")
    pods_per_node = size.pods // size.nodes
    for n in range(size.nodes):
        pool = f"gpu-{n % POOLS}"
        node = sim.add_node(pool)["metadata"]["name"]
        for k in range(pods_per_node):
            namespace = f"team-{(n * pods_per_node + k) % NAMESPACES:02d}"
            gpus = 1 if k < 8 else 0
            api.put("pods", _pod(f"{node}-p{k}", namespace, node, pool, gpus))
    for i in range(size.cronjobs):
        run = datetime.fromtimestamp(_run_time(i, size), UTC)
        job = cronjob(
            f"cron-{i:05d}",
            pool=f"gpu-{i % POOLS}",
            schedule=f"{run.minute} {run.hour} * * *",
            job_spec={"parallelism": 1, "completions": 1},
            status={"lastScheduleTime": _stamp(_run_time(i, size) - DAY)},
        )
        job["metadata"]["namespace"] = f"team-{i % NAMESPACES:02d}"
        api.put("cronjobs", job)


def _kind(request: Request) -> str:
    """``read pods``, ``write configmaps``...: what a request did to which resource."""
    found = API_PATH.match(request.path)
    what = found.group("resource") if found else request.path.rsplit("/", 1)[-1]
    return f"{'write' if request.method in WRITE_METHODS else 'read'} {what}"


def _serve(conn: Connection, size: Size) -> None:
    """The double's process: builds the cluster, then answers the bench's commands."""
    try:
        _answer(conn, size)
    except BaseException:
        traceback.print_exc()
        raise


def _answer(conn: Connection, size: Size) -> None:
    with KubeApiDouble() as api:
        api.clock = float(NOW)
        sim = ClusterSim(api)
        began = time.perf_counter()
        _populate(api, sim, size)
        api.requests.clear()
        conn.send((api.url, time.perf_counter() - began))
        moved = 0
        while True:
            command, arg = conn.recv()
            if command == "stop":
                conn.send(None)
                return
            if command == "count":  # the daemon's requests since the last count, by kind
                conn.send(Counter(_kind(r) for r in api.requests))
                api.requests.clear()
            elif command == "clock":  # the CronJob controller, then time moves on
                api.clock = float(arg)
                while moved < size.cronjobs and _run_time(moved, size) <= arg:
                    key = ("cronjobs", f"team-{moved % NAMESPACES:02d}", f"cron-{moved:05d}")
                    obj = api.store.get(key)
                    obj["status"] = {"lastScheduleTime": _stamp(_run_time(moved, size))}
                    api.store.replace(key, obj)
                    moved += 1
                conn.send(moved)
            elif command == "state":
                maps = api.store.list("configmaps", "forecaster")
                sizes = {m["metadata"]["name"]: len(json.dumps(m.get("data", {}))) for m in maps}
                conn.send(sizes)


def _settings(pools: list[str], models: str) -> Settings:
    return Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": models,
            "planning": {
                "actuation": "placeholders",
                "budgets": {
                    "max_total_prewarm_gpus": 2000,
                    "max_prewarm_gpu_hours_per_day": 200_000,
                    "max_cost_per_hour": 1e6,
                },
            },
            "pools": [{"name": n, "gpus_per_node": 8, "max_prewarm_gpus": 64} for n in pools],
        }
    )


class Double:
    """The double's process and its end of the pipe: each command waits for the answer, and
    fails with the process's exit code if it died instead."""

    def __init__(self, size: Size) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, theirs = context.Pipe()
        self.process = context.Process(target=_serve, args=(theirs, size), daemon=True)
        self.process.start()

    def answer(self) -> Any:
        while not self.conn.poll(1.0):
            if not self.process.is_alive():
                raise RuntimeError(f"the API double's process ended ({self.process.exitcode})")
        return self.conn.recv()

    def ask(self, command: str, arg: object = None) -> Any:
        self.conn.send((command, arg))
        return self.answer()


@dataclass
class Ticks:
    """What each tick cost the daemon's process (index 0: the first tick)."""

    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    reads: list[int] = field(default_factory=list)
    writes: list[int] = field(default_factory=list)
    state_bytes: list[int] = field(default_factory=list)
    rss_after_first: float = 0.0
    in_flight: int = 0
    cpu_between: float = 0.0
    """The daemon process's CPU per tick over the run, between ticks too (the pod watch)."""
    last_requests: dict[str, int] = field(default_factory=dict)
    errors: object = None


def measure(ticks: int, every: int, size: Size) -> Ticks:
    """The double started in its own process, the daemon built here, ``ticks`` + 1 ticks."""
    names = [f"gpu-{p}" for p in range(POOLS)]
    itp = CsvSource({"s": ROOT / "data/samples/msr-itp-cluster04.csv"}).fetch_all(
        "s", step_seconds=60
    )[0]
    series = {n: (itp, NOW - (itp.start + (15 + i % 10) * DAY)) for i, n in enumerate(names)}
    models = publish_models(series, now=NOW)
    double = Double(size)
    url, built = double.answer()
    print(
        f"API double (own process) built in {built:.0f} s: {POOLS} pools, {size.nodes} nodes,"
        f" {size.pods} pods, {NAMESPACES} namespaces, {size.cronjobs} GPU CronJobs due within"
        " the day",
        flush=True,
    )
    clock = FakeClock(datetime.fromtimestamp(NOW, tz=UTC))
    kube = Kube(api_client(host=url), dry_run=False)
    service = build_cluster_service(
        _settings(names, str(models)), kube, identity="bench", clock=clock
    )
    service.daemon.reconciler.source = ShiftedSource(series)
    service.daemon.reconciler.save_every_seconds = 0  # the state is saved at every tick
    if service.watch is not None:  # as in production (``watch_pods``): other pods from its cache
        service.watch.start()
        while service.watch.pods() is None:
            time.sleep(0.1)
    double.ask("count")
    out = Ticks()
    for k in range(ticks + 1):
        t = NOW + k * every
        clock.set(datetime.fromtimestamp(t, tz=UTC))
        double.ask("clock", t)
        service.renew()
        cpu, wall = time.process_time(), time.perf_counter()
        service.reconcile()
        out.walls.append(time.perf_counter() - wall)
        out.cpus.append(time.process_time() - cpu)
        sent = double.ask("count")
        out.reads.append(sum(n for kind, n in sent.items() if kind.startswith("read")))
        out.writes.append(sum(n for kind, n in sent.items() if kind.startswith("write")))
        out.last_requests = dict(sorted(sent.items()))
        out.state_bytes.append(sum(double.ask("state").values()))
        if k == 0:
            out.rss_after_first, all_cpu = rss_mib(), time.process_time()
    out.cpu_between = (time.process_time() - all_cpu) / ticks  # the watch's thread too
    out.errors = service.daemon.last.errors if service.daemon.last else None
    out.in_flight = len(service.daemon.reconciler.notice_ledger.saved()[1])
    service.stop()
    double.ask("stop")
    double.process.join(timeout=30)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=20)
    parser.add_argument("--every", type=int, default=30)
    parser.add_argument("--scale", type=float, default=1.0, help="of the nodes, pods, CronJobs")
    args = parser.parse_args()
    m = measure(args.ticks, args.every, Size().scaled(args.scale))
    print(f"first tick (lists everything): wall {m.walls[0]:.2f} s, CPU {m.cpus[0]:.2f} s")
    print(f"{args.ticks} ticks every {args.every} s after it:")
    for label, values in (("wall", m.walls[1:]), ("daemon CPU", m.cpus[1:])):
        d = np.array(values)
        print(
            f"  {label} seconds per tick: p50 {np.percentile(d, 50):.2f},"
            f" p95 {np.percentile(d, 95):.2f}, max {d.max():.2f}"
        )
    print(f"  daemon process CPU per tick, between ticks too (the pod watch): {m.cpu_between:.2f}")
    reads, writes = m.reads[1:], m.writes[1:]
    print(
        f"  API requests per tick: reads p50 {int(np.median(reads))} (max {max(reads)}),"
        f" writes p50 {int(np.median(writes))} (max {max(writes)})"
    )
    print(f"  the last tick's: {', '.join(f'{n} {kind}' for kind, n in m.last_requests.items())}")
    print(
        f"  state ConfigMap: {max(m.state_bytes) / 1024:.0f} KiB at most (saved every tick),"
        f" {m.in_flight} items in flight at the end"
    )
    print(
        f"RSS MiB: after the first tick {m.rss_after_first:.0f}, at the end {rss_mib():.0f};"
        f" peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}"
    )
    print(f"errors in the last tick: {m.errors or 'none'}")


if __name__ == "__main__":
    with threadpool_limits(limits=1):
        main()
