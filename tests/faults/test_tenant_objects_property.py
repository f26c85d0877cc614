"""Property: whatever one tenant writes into one object, the observation never raises, and no
*other* object's announced item and no pool's snapshot (its own items aside) differ from the
same observation without that object.

The cluster (two pools, their nodes, NodePools and running pods) is built once on the API
double and then read from memory, so hypothesis can try hundreds of objects a run. The object
under test is a CronJob, a JobSet, an Argo Workflow, a Volcano PodGroup or a pending pod, in
the tenant's namespace, with one GPU quantity of an invalid or extreme form (``1Ki``, ``2T``,
``1e3``, ``500m``, ``-1``, ``""``, non-strings...) and some damage to its shape (missing
containers, an owner cycle, a 253-character name, an unknown time zone, an impossible
schedule, a notice object's spec of the wrong type).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forecaster.actuators.notice.base import NoticeReader
from forecaster.actuators.notice.registry import SOURCES
from forecaster.actuators.observe.observer import observe
from forecaster.core.cluster import Observation
from forecaster.testing.fakes import T0
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.objects import cronjob
from tests.factories import argo_workflow, jobset, podgroup

A, B = "gpu-a", "gpu-b"
GPU = "nvidia.com/gpu"
TENANT = "tenant"
KINDS = {  # (group, version, plural) the notice sources list, by our short name
    "cronjobs": ("batch", "v1", "cronjobs"),
    "jobsets": ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
    "workflows": ("argoproj.io", "v1alpha1", "workflows"),
    "podgroups": ("scheduling.volcano.sh", "v1beta1", "podgroups"),
}
SOURCE_NAMES = ("cronjob", "jobset", "argo", "volcano")


class Cluster:
    """The reads ``observe`` and the notice sources make, served from memory."""

    def __init__(self, objects: dict[str, list[dict[str, Any]]]) -> None:
        self.objects = objects

    def list_nodes(self, *, labels: str | None = None) -> list[dict[str, Any]]:
        return copy.deepcopy(self.objects["nodes"])

    def list_pods(self, **_: Any) -> list[dict[str, Any]]:
        return copy.deepcopy(self.objects["pods"])

    def list_nodepools(self) -> list[dict[str, Any]]:
        return copy.deepcopy(self.objects["nodepools"])

    def get_nodepool(self, name: str) -> dict[str, Any] | None:
        found = [n for n in self.objects["nodepools"] if n["metadata"]["name"] == name]
        return copy.deepcopy(found[0]) if found else None

    def list_events(self, **_: Any) -> list[dict[str, Any]]:
        return []

    def list_objects(
        self, group: str, version: str, plural: str, *, labels: str | None = None
    ) -> list[dict[str, Any]] | None:
        for name, served in KINDS.items():
            if served == (group, version, plural):
                return [o for o in copy.deepcopy(self.objects.get(name, [])) if _has(o, labels)]
        if (group, plural) == ("batch", "jobs"):
            return []
        if (group, plural) == ("scheduling.volcano.sh", "queues"):
            return []
        return None


def _has(obj: Any, labels: str | None) -> bool:
    """``labels`` (``k=v`` or ``k``) matches ``obj`` - as the API server's selector would."""
    if not labels:
        return True
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    found = (meta.get("labels") if isinstance(meta, dict) else None) or {}
    key, _, value = labels.partition("=")
    return isinstance(found, dict) and key in found and (not value or found[key] == value)


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, list[dict[str, Any]]]]:
    """Two 8-GPU pools with a node and a running job each, and announced work on both."""
    with KubeApiDouble(jobsets=True, argo=True, volcano=True) as api:
        api.clock = float(T0)
        sim = ClusterSim(api)
        sim.running_pools(A, B, limit_gpus=400)
        sim.submit("waiting", B, 8)  # pending real demand on B
        yield {
            "nodes": api.objects("nodes"),
            "nodepools": api.objects("nodepools"),
            "pods": api.objects("pods", "ml"),
            "cronjobs": [cronjob("nightly", pool=A), cronjob("hourly", pool=B)],
            "jobsets": [jobset("train-1", pool=A), jobset("train-2", pool=B, owner=None)],
            "workflows": [argo_workflow("wf", pool=B, namespace="ml")],
            "podgroups": [podgroup("group", pool=A, namespace="ml")],
        }


QUANTITIES = (
    st.sampled_from(
        [
            "1Ki",
            "2T",
            "1e3",
            "500m",
            "-1",
            "",
            "1Gi",
            "2E",
            "1e999999",
            " 1Ki ",
            "9" * 80,
            "0x10",
            "NaN",
            "Infinity",
            "1_0",
            "+-1",
            "1.5.2",
            "8Ki",
            "1E3",
            ".5e40",
            "-0",
        ]
    )
    | st.integers().filter(lambda n: n < 0 or n == 0 or n > 8)
    | st.floats(allow_nan=True, allow_infinity=True).filter(lambda f: not 0 < f < 9)
    | st.none()
    | st.booleans()
    | st.lists(st.integers(), max_size=2)
    | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)
)
DAMAGE = st.sets(
    st.sampled_from(
        ["no-containers", "owner-cycle", "long-name", "time-zone", "impossible", "spec-list"]
    ),
    max_size=3,
)


def containers_of(kind: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The GPU containers of the object's pod template(s)."""
    if kind == "cronjobs":
        return list(obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"])
    if kind == "jobsets":
        job = obj["spec"]["replicatedJobs"][1]["template"]["spec"]
        return list(job["template"]["spec"]["containers"])
    if kind == "workflows":
        return [obj["spec"]["templates"][2]["container"]]
    return list(obj["spec"]["containers"])  # a pod


def tenant_object(kind: str, quantity: Any, damage: set[str]) -> dict[str, Any]:
    """The one object under test: ``kind`` on pool B, asking ``quantity`` and damaged so."""
    pool = B
    if kind == "cronjobs":
        obj = cronjob("tenant-job", pool=pool)
    elif kind == "jobsets":
        obj = jobset("tenant-job", pool=pool, owner=None)
    elif kind == "workflows":
        obj = argo_workflow("tenant-job", pool=pool, namespace=TENANT)
    elif kind == "podgroups":
        obj = podgroup("tenant-job", pool=pool, namespace=TENANT)
        obj["spec"]["minResources"] = {GPU: quantity}
    else:
        obj = {
            "metadata": {"name": "tenant-job", "uid": "tenant-uid"},
            "spec": {
                "nodeSelector": {"karpenter.sh/nodepool": pool},
                "containers": [{"name": "x", "image": "x"}],
            },
            "status": {"phase": "Pending"},
        }
    obj["metadata"]["namespace"] = TENANT
    if kind != "podgroups":
        for container in containers_of(kind, obj):
            container["resources"] = {"requests": {GPU: quantity}, "limits": {GPU: quantity}}
    _damage(kind, obj, damage)
    return obj


def _damage(kind: str, obj: dict[str, Any], damage: set[str]) -> None:
    meta = obj["metadata"]
    if "long-name" in damage:
        meta["name"] = "n" * 253
    if "owner-cycle" in damage:
        meta["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "uid": "u"},
            {"apiVersion": "batch/v1", "kind": "CronJob", "name": meta["name"], "uid": "u"},
        ]
    if kind == "cronjobs" and "time-zone" in damage:
        obj["spec"]["timeZone"] = "Mars/Olympus_Mons"
    if kind == "cronjobs" and "impossible" in damage:
        obj["spec"]["schedule"] = "0 0 31 2 *"
    if "no-containers" in damage and kind != "podgroups":
        for container in containers_of(kind, obj):
            container.clear()
    if "spec-list" in damage and kind != "pods":  # (a Pod's spec is typed: the API server
        obj["spec"] = [obj["spec"]]  # serves none of another shape; a CRD's may be anything)


def observed(objects: dict[str, list[dict[str, Any]]]) -> Observation:
    reader = NoticeReader([SOURCES.get(name) for name in SOURCE_NAMES])
    return observe(
        Cluster(objects),  # type: ignore[arg-type]
        pools=[A, B],
        now=T0,
        notice=reader,
        node_units={A: 8, B: 8},
    )


def without_tenant(observation: Observation) -> dict[str, Any]:
    """Each pool's snapshot with the tenant's own items left out."""
    return {
        pool: dataclasses.replace(
            snap, announced=tuple(i for i in snap.announced if TENANT not in i.key)
        )
        for pool, snap in observation.items()
    }


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kind=st.sampled_from([*KINDS, "pods"]),
    quantity=QUANTITIES,
    damage=DAMAGE,
)
def test_one_tenant_object_changes_nothing_else(
    cluster: dict[str, list[dict[str, Any]]], kind: str, quantity: Any, damage: set[str]
) -> None:
    before = observed(cluster)
    assert all(s.problem is None for s in before.values())
    assert sum(len(s.announced) for s in before.values()) >= 4  # the others' work is seen
    with_it = copy.deepcopy(cluster)
    with_it[kind] = [*with_it.get(kind, []), tenant_object(kind, quantity, damage)]
    after = observed(with_it)  # never raises
    assert without_tenant(after) == without_tenant(before)
    assert [s.problem for s in after.notice] == [s.problem for s in before.notice]
