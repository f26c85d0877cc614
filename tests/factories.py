"""Builders the tests share: one place, instead of test modules importing from each other.

Daemon on the API double (``settings``, ``client``, ``reconciler``, ``placeholders``), planner
inputs (``policy``, ``snapshot``, ``forecast``), Kueue objects (``flavor``, ``cluster_queue``) and
replay runs (``REPLAY_T0``, ``synthetic``, ``setup``), arrivals (``bursty``).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

import numpy as np

from forecaster.actuators.attribution import shape
from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.nodepools import NodePools
from forecaster.actuators.notice.base import NoticeReading, NoticeSource, read_notice
from forecaster.actuators.prewarm.capacitybuffers import CapacityBuffers
from forecaster.actuators.prewarm.placeholders import PlaceholderSpec
from forecaster.app import build
from forecaster.app.replay_policies import replay_policy
from forecaster.core.cluster import DemandForecast, PoolSnapshot
from forecaster.core.jobs import JobTrace
from forecaster.core.operating_point import OperatingPoint
from forecaster.core.policy import Budgets, PoolPolicy
from forecaster.core.series import DemandSeries
from forecaster.durations import DAY
from forecaster.forecasting.artifacts import ArtifactStore
from forecaster.forecasting.registry import build as build_model
from forecaster.reconcile.loop import Reconciler
from forecaster.settings import Settings
from forecaster.simulation.frontier import frontier
from forecaster.simulation.replay import Predictive, ReplaySetup, RetrainSchedule
from forecaster.simulation.twin import TwinConfig
from forecaster.testing.fakes import POOL, T0, LiveSource, settings
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.objects import GPU

KUEUE_API = "kueue.x-k8s.io/v1beta2"

NS = "forecaster-placeholders"
"""The placeholders' namespace (placeholder Jobs and pods, CapacityBuffers, PodTemplates)."""
HOME = "forecaster"
"""forecaster's own: its state, Lease, kill switch, models and Events."""


def client(api: KubeApiDouble, *, dry_run: bool = False) -> Kube:
    return Kube(api_client(host=api.url), dry_run=dry_run, backoff_seconds=0.01)


def reconciler(
    tmp_path: Path, api: KubeApiDouble, source: LiveSource, **changes: object
) -> Reconciler:
    config = settings(tmp_path, **changes)
    return build.build_reconciler(config, source=source, kube=client(api, dry_run=config.dry_run))


def placeholders(api: KubeApiDouble) -> list[dict[str, object]]:
    """Our placeholder Jobs (each owns one pod once the Job controller has run)."""
    return api.objects("jobs", NS)


NOW = 1_800_000_000


def policy(pool: str = "a", **changes: object) -> PoolPolicy:
    base = PoolPolicy(
        pool=pool,
        gpus_per_node=8,
        placeholder_size_gpus=8,
        max_prewarm_gpus=64,
        price_per_gpu_hour=2.0,
        stale_after_seconds=300,
        hold_seconds=600,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def snapshot(pool: str = "a", **changes: object) -> PoolSnapshot:
    base = PoolSnapshot(
        pool=pool,
        observed_at=NOW,
        allocatable_gpus=40,
        launching_gpus=0,
        running_gpus=36,
        pending_gpus=0,
        prewarm_gpus=0,
        nodepool_limit_gpus=200,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def forecast(p95: float, pool: str = "a", data_end: int = NOW - 60) -> DemandForecast:
    return DemandForecast(
        pool=pool, p50_gpus=p95 * 0.9, upper_gpus=p95, data_end=data_end, model="m", quantile=0.95
    )


def one_pool_settings(tmp_path: Path) -> Settings:
    """One 8-GPU-node pool that may prewarm 64 GPUs with placeholders: the daemon of the notice
    and DRA tests."""
    return Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(tmp_path / "models"),
            "planning": {"actuation": "placeholders", "budgets": {"max_total_prewarm_gpus": 64}},
            "pools": [{"name": POOL, "gpus_per_node": 8, "max_prewarm_gpus": 64}],
        }
    )


def read_source(api: KubeApiDouble, source: NoticeSource, now: int) -> NoticeReading:
    """What one notice source reads from the double now, through the Kube adapter, over the
    double's NodePools."""
    kube = Kube(api_client(host=api.url), dry_run=True)
    shapes = [shape(n) for n in kube.list_nodepools()]
    return read_notice(kube, [source], pools=shapes, now=now)


def flavor(name: str, pool: str) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": {"karpenter.sh/nodepool": pool}},
    }


def workload(
    name: str, gpus_per_pod: int, count: int, *conditions: tuple[str, str, str]
) -> dict[str, Any]:
    """A Workload in ``ml`` on ClusterQueue ``research-a``, its GPUs assigned flavor ``a100``,
    each condition (type, status, reason) changed at 08:05 (T0 + 300)."""
    return {
        "apiVersion": KUEUE_API,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ml", "creationTimestamp": "2027-01-15T08:00:00Z"},
        "spec": {
            "queueName": "research",
            "podSets": [
                {
                    "name": "main",
                    "count": count,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "train",
                                    "resources": {"requests": {GPU: gpus_per_pod}},
                                }
                            ]
                        }
                    },
                }
            ],
        },
        "status": {
            "admission": {
                "clusterQueue": "research-a",
                "podSetAssignments": [{"name": "main", "flavors": {GPU: "a100"}, "count": count}],
            },
            "conditions": [
                {
                    "type": t,
                    "status": s,
                    "reason": r,
                    "message": "",
                    "lastTransitionTime": "2027-01-15T08:05:00Z",
                }
                for t, s, r in conditions
            ],
        },
    }


def cluster_queue(name: str, cohort: str, nominal: int, used: int, **limits: int) -> dict[str, Any]:
    resource: dict[str, Any] = {"name": GPU, "nominalQuota": nominal}
    if "borrowing" in limits:
        resource["borrowingLimit"] = limits["borrowing"]
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "cohortName": cohort,
            "resourceGroups": [
                {"coveredResources": [GPU], "flavors": [{"name": "a100", "resources": [resource]}]}
            ],
        },
        "status": {
            "flavorsReservation": [
                {"name": "a100", "resources": [{"name": GPU, "total": used, "borrowed": 0}]}
            ]
        },
    }


REPLAY_T0 = 1_800_000_000 - 1_800_000_000 % 86400


def synthetic(days: float, *, seed: int, start: float = 0.0) -> JobTrace:
    rng = np.random.default_rng(seed)
    count = int(days * 600)
    submit = np.sort(rng.uniform(start, start + days * DAY, count))
    duration = rng.uniform(1800, 6 * 3600, count)
    gpus = rng.choice([1, 1, 1, 2, 8], count)
    return JobTrace(submit=REPLAY_T0 + submit, duration=duration, gpus=gpus.astype(np.int64))


def bursty(
    days: float, *, seed: int, start: int = NOW - NOW % 60
) -> tuple[DemandSeries, DemandSeries]:
    """(demand, arrivals) per minute of a pool fed by batch submissions: a burst every ~3 h
    lands 8 GPUs a minute for 8 minutes, over a trickle of single GPUs; every GPU runs an
    hour. Bursts continue once begun - what the arrivals model must learn."""
    rng = np.random.default_rng(seed)
    minutes = int(days * 1440)
    arrivals = rng.poisson(0.2, minutes).astype(float)
    for begin in np.flatnonzero(rng.random(minutes) < 1 / 180):
        arrivals[begin : begin + 8] += 8
    demand = np.convolve(arrivals, np.ones(60))[:minutes]
    return (
        DemandSeries(start, 60, demand, name="a"),
        DemandSeries(start, 60, arrivals, name="a"),
    )


def jobs_csv(path: Path, jobs: JobTrace) -> tuple[Path, str]:
    """``jobs`` written as a job-trace CSV (seconds from ``REPLAY_T0``), and that epoch in ISO."""
    rows = [
        f"j{i},{s - REPLAY_T0:.0f},{d:.0f},{g}"
        for i, (s, d, g) in enumerate(zip(jobs.submit, jobs.duration, jobs.gpus, strict=True))
    ]
    path.write_text("job_id,submission_time,duration,num_gpu\n" + "\n".join(rows) + "\n")
    return path, np.datetime64(REPLAY_T0, "s").astype(str) + "Z"


def setup(days: float, cap: int = 512) -> ReplaySetup:
    return ReplaySetup(
        twin=TwinConfig(max_prewarm_gpus=cap),
        start=REPLAY_T0,
        warmup_end=REPLAY_T0 + DAY,
        end=int(REPLAY_T0 + days * DAY),
        budgets=Budgets(
            max_total_prewarm_gpus=cap,
            max_prewarm_gpu_hours_per_day=cap * 24.0,
            max_cost_per_hour=cap * 4.1,
            commitment_seconds=3600,
        ),
        max_prewarm_gpus=cap,
    )


def publish_with_point(models: Path, source: LiveSource, point: OperatingPoint) -> None:
    """A quantreg-raw model of ``POOL`` fitted for every quantile an operating point may
    choose, published with ``point`` - as the training job does with a budget set."""
    quantiles = settings(models, operating_point={"budget_percent": 5}).model_quantiles
    series, _ = source.fetch(POOL, start=0, end=T0, step_seconds=60)
    model = build_model("quantreg-raw", horizons_seconds=(300, 900, 1800), quantiles=quantiles)
    ArtifactStore(models).publish(
        pool=POOL,
        model_name="quantreg-raw",
        model=model.fit(series),
        metadata={},
        created="20260101T000000Z",
        operating_point=point,
    )


def jobset(
    name: str = "train-1",
    *,
    pool: str,
    depends: str = "Complete",
    upstream: dict[str, int] | None = None,
    gpu_counts: dict[str, int] | None = None,
    owner: str | None = "llm",
) -> dict[str, Any]:
    """A Kubeflow-Trainer-like JobSet: a CPU ``dataset-initializer`` and a GPU ``node`` job of
    2 replicas x 8 GPUs that ``dependsOn`` it (``depends``: Ready or Complete); ``upstream`` and
    ``gpu_counts``: their status counts (default: the initializer running, node waiting)."""
    zero = {"active": 0, "ready": 0, "succeeded": 0, "failed": 0, "suspended": 0}
    gpu_pod = {
        "restartPolicy": "Never",
        "nodeSelector": {"karpenter.sh/nodepool": pool},
        "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [
            {
                "name": "node",
                "image": "ml/train:1",
                "resources": {"requests": {GPU: "8"}, "limits": {GPU: "8"}},
            }
        ],
    }
    cpu_pod = {"restartPolicy": "Never", "containers": [{"name": "init", "image": "ml/init:1"}]}
    meta: dict[str, Any] = {"name": name, "namespace": "ml"}
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": "trainer.kubeflow.org/v1alpha1",
                "kind": "TrainJob",
                "name": owner,
                "uid": f"uid-{owner}",
                "controller": True,
            }
        ]
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": meta,
        "spec": {
            "replicatedJobs": [
                {
                    "name": "dataset-initializer",
                    "replicas": 1,
                    "template": {"spec": {"template": {"spec": cpu_pod}}},
                },
                {
                    "name": "node",
                    "replicas": 2,
                    "dependsOn": [{"name": "dataset-initializer", "status": depends}],
                    "template": {
                        "spec": {"parallelism": 1, "completions": 1, "template": {"spec": gpu_pod}}
                    },
                },
            ]
        },
        "status": {
            "replicatedJobsStatus": [
                {"name": "dataset-initializer", **zero, **(upstream or {"active": 1, "ready": 1})},
                {"name": "node", **zero, **(gpu_counts or {})},
            ]
        },
    }


def jobset_job(
    jobset_name: str, replicated: str, *, started: str, completed: str | None = None
) -> dict[str, Any]:
    """A Job a JobSet made (its labels, start and - when finished - completion time)."""
    status: dict[str, Any] = {"startTime": started}
    if completed:
        status["completionTime"] = completed
        status["succeeded"] = 1
        status["conditions"] = [
            {"type": "SuccessCriteriaMet", "status": "True"},
            {"type": "Complete", "status": "True"},
        ]
    else:
        status["active"] = 1
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"{jobset_name}-{replicated}-0",
            "namespace": "ml",
            "labels": {
                "jobset.sigs.k8s.io/jobset-name": jobset_name,
                "jobset.sigs.k8s.io/replicatedjob-name": replicated,
            },
        },
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "init", "image": "ml/init:1"}],
                }
            }
        },
        "status": status,
    }


DAILY = RetrainSchedule(min_train_seconds=DAY, every_seconds=DAY)


def predictive(s: ReplaySetup) -> Predictive:
    """The daemon's loop as replay runs it, retrained daily (short test traces)."""
    policy = replay_policy(
        "predictive",
        dataclasses.replace(s, retrain=DAILY),
        jobs=JobTrace(np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)),
    )
    assert isinstance(policy, Predictive)
    return policy


def bursts_after_a_trickle() -> tuple[JobTrace, np.ndarray]:
    """2.5 days of a synthetic trickle; from day 1.5, every 30 minutes for 8 hours, a batch of
    twelve 8-GPU jobs of 20 minutes - unlike anything before. The trace, and which jobs are of
    the bursts."""
    trickle = synthetic(2.5, seed=5)
    burst = np.repeat(REPLAY_T0 + 1.5 * DAY + 1800 * np.arange(16), 12)
    submit = np.concatenate([trickle.submit, burst])
    order = np.argsort(submit, kind="stable")
    jobs = JobTrace(
        submit=submit[order],
        duration=np.concatenate([trickle.duration, np.full(burst.size, 1200.0)])[order],
        gpus=np.concatenate([trickle.gpus, np.full(burst.size, 8)])[order],
    )
    return jobs, np.isin(jobs.submit, burst) & (jobs.gpus == 8)


def small_frontier(*, continuation_gaps: tuple[float, ...] = ()) -> Any:
    """``simulation.frontier.frontier`` with one or two knobs per built-in curve: what a test of
    the command's wiring swaps in for the full sweep (the sweep itself: ``test_frontier``)."""
    return functools.partial(
        frontier,
        static_knobs=(0, 32),
        predictive_knobs=(0.9,),
        floor_nodes=(0,),
        burst_knobs=(2.0,),
        continuation_gaps=continuation_gaps,
    )


PAUSE_RECORD = "forecaster.io/original-disruption"
POOL_LABEL = "karpenter.sh/nodepool"


def held_since(api: KubeApiDouble, pools: list[str], buffered: list[str], *, since: int) -> Kube:
    """Pause every NodePool of ``pools`` and hold a CapacityBuffer for each of ``buffered``,
    all from ``since`` with one-hour deadlines: what expiry and uninstall undo."""
    sim = ClusterSim(api)
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    for name in pools:
        sim.add_nodepool(name, limit_gpus=200)
        NodePools(kube).protect(name, consolidate_after="30m", now=since, seconds=3600)
    buffers = CapacityBuffers(kube, namespace=NS, priority_class="forecaster-placeholder")
    for name in buffered:
        buffers.apply(PlaceholderSpec(pool=name, gpus=8), replicas=2, now=since)
    return kube


def paused_nodepools(api: KubeApiDouble) -> set[str]:
    """The NodePools carrying our pause record."""
    return {
        n["metadata"]["name"]
        for n in api.objects("nodepools")
        if PAUSE_RECORD in (n["metadata"].get("annotations") or {})
    }


def argo_workflow(name: str, *, pool: str, namespace: str, gpus: str = "8") -> dict[str, Any]:
    """A running Argo DAG on ``pool`` whose GPU step (``gpus`` per pod) waits on a finished
    CPU step: announced as due now."""
    leaf = {
        "nodeSelector": {"karpenter.sh/nodepool": pool},
        "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
    }
    started = "2027-01-15T07:00:00Z"
    tasks = [
        {"name": "prep", "template": "prep"},
        {"name": "train", "template": "train", "dependencies": ["prep"]},
    ]
    train = {"image": "train", "resources": {"requests": {GPU: gpus}, "limits": {GPU: gpus}}}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"workflows.argoproj.io/phase": "Running"},
        },
        "spec": {
            "entrypoint": "main",
            "templates": [
                {"name": "main", "dag": {"tasks": tasks}},
                {"name": "prep", "container": {"image": "prep"}, **leaf},
                {"name": "train", "container": train, **leaf},
            ],
        },
        "status": {
            "phase": "Running",
            "nodes": {
                name: {
                    "id": name,
                    "name": name,
                    "displayName": name,
                    "type": "DAG",
                    "phase": "Running",
                    "templateName": "main",
                    "startedAt": started,
                },
                f"{name}.prep": {
                    "id": f"{name}.prep",
                    "name": f"{name}.prep",
                    "displayName": "prep",
                    "type": "Pod",
                    "phase": "Succeeded",
                    "boundaryID": name,
                    "templateName": "prep",
                    "startedAt": started,
                    "finishedAt": started,
                },
            },
        },
    }


def podgroup(name: str, *, pool: str, namespace: str, gpus: str = "8") -> dict[str, Any]:
    """A pending Volcano PodGroup of one pod asking ``gpus`` on ``pool`` (by its label)."""
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "labels": {POOL_LABEL: pool}},
        "spec": {"minMember": 1, "minResources": {GPU: gpus}},
        "status": {"phase": "Pending"},
    }
