"""Shared fixtures: the shipped sample series and one real Prometheus for the whole session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from forecaster.core.quality import QualityReport
from forecaster.core.series import DemandSeries
from forecaster.sources.files import CsvSource
from forecaster.testing.fakes import POOL, T0
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.prometheus_server import Series, running_prometheus

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "data" / "samples"
HELIOS = SAMPLES / "helios-earth-2020-05.csv"
ITP = SAMPLES / "msr-itp-cluster04.csv"

# single-threaded BLAS: 2 cores, and pytest may share them with Prometheus
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def load_sample(
    path: Path, *, outage_min_seconds: int = 3600
) -> tuple[DemandSeries, QualityReport]:
    """A shipped sample series on its 60 s grid, cleaned like any source would."""
    source = CsvSource({path.stem: path}, outage_min_seconds=outage_min_seconds)
    return source.fetch_all(path.stem, step_seconds=60)


@pytest.fixture(scope="session")
def helios() -> DemandSeries:
    return load_sample(HELIOS)[0]


@pytest.fixture(scope="session")
def itp() -> DemandSeries:
    return load_sample(ITP)[0]


KSM_START = 1_768_000_000 - 1_768_000_000 % 3600  # 2026-01-09T22:00Z: far older than the head block
BACKFILL_DAYS = 16


OUR_NAMESPACE = "forecaster-placeholders"  # where our placeholders live (excluded from demand)
KSM_CREATED = {
    "a": KSM_START - 3600,
    "b": KSM_START + 10 * 60 + 20,
    "c": KSM_START - 600,
    "d": KSM_START + 30 * 60 + 5,
    "e": KSM_START + 45 * 60 + 59,
    "forecaster-gpu-a-0-1": KSM_START + 5 * 60,  # created in the window: not an arrival either
}
"""Creation time of each pod (``kube_pod_created``): b, d and e within the two hours."""

KSM_STARTED = {
    "a": KSM_CREATED["a"] + 60,
    "b": KSM_START + 30 * 60,
    "c": KSM_CREATED["c"] + 30,
    "d": KSM_CREATED["d"],
    "forecaster-gpu-a-0-1": KSM_CREATED["forecaster-gpu-a-0-1"] + 30,
}
"""When a node took each pod (``kube_pod_start_time``): e never left Pending."""


def ksm_series() -> list[Series]:
    """kube-state-metrics for five pods over two hours (see test_default_query_*)."""
    minutes = range(0, 120)

    def at(minute: int) -> int:
        return KSM_START + 60 * minute

    pods = {
        # pod: (nodepool, [container GPUs], phase by minute)
        "a": ("gpu-a", [2], lambda m: "Running"),
        "b": ("gpu-a", [4], lambda m: "Pending" if m < 30 else "Running"),
        "c": ("gpu-a", [8], lambda m: "Running" if m < 60 else "Succeeded"),
        "d": ("gpu-b", [1], lambda m: "Running"),
        "e": ("gpu-a", [1, 1], lambda m: "Pending" if m < 90 else "Failed"),
        # our own placeholder (forecaster's namespace): held all along, never demand
        "forecaster-gpu-a-0-1": ("gpu-a", [8], lambda m: "Running"),
    }
    out: list[Series] = []
    for pod, (pool, containers, phase_of) in pods.items():
        ident = {"namespace": OUR_NAMESPACE if pod.startswith("forecaster-") else "ml", "pod": pod}
        for i, gpus in enumerate(containers):
            # kube-state-metrics labels ``node`` once the pod is bound: a new series from then
            bound = {m: phase_of(m) != "Pending" for m in minutes}
            for on_node in (False, True):
                samples = [(at(m), float(gpus)) for m in minutes if bound[m] == on_node]
                if samples:
                    labels = {
                        **ident,
                        "container": f"c{i}",
                        "resource": "nvidia_com_gpu",
                        "unit": "integer",
                    }
                    if on_node:
                        labels["node"] = f"{pool}-node-1"
                    out.append(Series("kube_pod_container_resource_requests", labels, samples))
        for phase in ("Pending", "Running", "Succeeded", "Failed", "Unknown"):
            out.append(
                Series(
                    "kube_pod_status_phase",
                    {**ident, "phase": phase},
                    [(at(m), 1.0 if phase_of(m) == phase else 0.0) for m in minutes],
                )
            )
        out.append(
            Series(
                "kube_pod_created",
                ident,
                [(at(m), float(KSM_CREATED[pod])) for m in minutes],
            )
        )
        if pod in KSM_STARTED:
            started = float(KSM_STARTED[pod])
            out.append(
                Series(
                    "kube_pod_start_time",
                    ident,
                    [(at(m), started) for m in minutes if at(m) >= started],
                )
            )
        out.append(
            Series(
                "kube_pod_nodeselectors",
                {**ident, "nodeselector_karpenter_sh_nodepool": pool},
                [(at(m), 1.0) for m in minutes],
            )
        )
    return out


@pytest.fixture(scope="session")
def prometheus_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus holding 16 days of the Helios series and the kube-state-metrics set."""
    helios_series, _ = load_sample(HELIOS, outage_min_seconds=0)
    first_days = helios_series.window(
        helios_series.start, helios_series.start + BACKFILL_DAYS * 86400
    )
    demand = Series(
        "gpus_requested",
        {"pool": "earth"},
        zip(first_days.timestamps.tolist(), first_days.values.tolist(), strict=True),
    )
    series = [demand, *faulty_series(first_days), *ksm_series()]
    with running_prometheus(tmp_path_factory.mktemp("prometheus"), series) as url:
        yield url


FAULTY = {"nan": float("nan"), "negative": -50.0, "spike": 1e6}
"""Copies of the demand whose last sample a faulty exporter got wrong (tests/faults)."""


def faulty_series(demand: DemandSeries) -> list[Series]:
    """``gpus_requested{pool=<kind>}``: the demand, its last sample replaced by a bad value."""
    out = []
    for kind, bad in FAULTY.items():
        values = demand.values.copy()
        values[-1] = bad
        samples = zip(demand.timestamps.tolist(), values.tolist(), strict=True)
        out.append(Series("gpus_requested", {"pool": kind}, samples, keep_nan=True))
    return out


@pytest.fixture
def api() -> Iterator[KubeApiDouble]:
    """The API server double (serving CapacityBuffers) at ``T0``; every object sent to it must
    pass the real schemas."""
    with KubeApiDouble(capacity_buffers=True) as server:
        server.clock = float(T0)
        yield server
    assert server.invalid == [], f"objects refused by schema validation: {server.invalid}"


@pytest.fixture
def busy_cluster(api: KubeApiDouble) -> ClusterSim:
    """A NodePool with two Ready 8-GPU nodes running two 8-GPU jobs (``ClusterSim.busy_pool``)."""
    cluster = ClusterSim(api)
    cluster.busy_pool(POOL)
    return cluster
