"""The observer's accounting of one pool, object by object (``_snapshot`` on objects built here).

What the GPUs we hold and the demand we read rest on: our placeholders are pods labelled by us
*and* as placeholders (a look-alike is real demand); their GPUs add up per node, pending ones
count against launching nodes no real pod claims; a busy node strands its free GPUs only when
Ready; a CapacityBuffer's pod-less nodes are ours unless a pause already bills them; nothing is
empty or held out of nothing, and a paused pool has no empty nodes. Arrivals: a pod's age is
now minus its creation; the last hour's pods (not an hour and more) give the images placeholders
pull, most GPUs first, never those behind pull secrets; announced work is not an arrival.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from forecaster.accelerators import GPU
from forecaster.actuators import labels as lbl
from forecaster.actuators.nodepools import FIELDS
from forecaster.actuators.observe.observer import _snapshot
from forecaster.actuators.observe.pod_tally import ClusterRead
from forecaster.actuators.prewarm.buffer_backend import CapacityBufferBackend
from forecaster.actuators.prewarm.capacitybuffers import CapacityBuffers
from forecaster.actuators.quantities import timestamp_seconds
from forecaster.core.cluster import PoolSnapshot

POOL = "gpu"
NOW = int(timestamp_seconds("2026-12-04T12:00:00Z"))
OURS = {lbl.MANAGED_BY: lbl.MANAGER, lbl.ROLE: lbl.PLACEHOLDER}


class NoNodePool:
    def get_nodepool(self, name: str) -> dict[str, Any] | None:
        return None


class PausedNodePool:
    """A NodePool our pause keeps (its record says until when)."""

    def get_nodepool(self, name: str) -> dict[str, Any] | None:
        settings = dict.fromkeys(FIELDS, "x")
        record = {"until": NOW + 600, "original": settings, "applied": settings}
        annotations = {lbl.ORIGINAL_DISRUPTION: json.dumps(record)}
        return {"metadata": {"name": name, "annotations": annotations}, "spec": {}}


def node(name: str, *, ready: bool = True, gpus: int = 8) -> dict[str, Any]:
    status = "True" if ready else "False"
    return {
        "metadata": {"name": name, "labels": {}},
        "status": {
            "allocatable": {GPU: str(gpus)},
            "conditions": [{"type": "Ready", "status": status}],
        },
    }


def pod(
    name: str,
    gpus: int,
    *,
    on: str | None = None,
    age: int = 7200,
    labels: dict[str, str] | None = None,
    image: str = "train:1",
    secrets: bool = False,
) -> dict[str, Any]:
    stamp = f"{datetime.fromtimestamp(NOW - age, tz=UTC):%Y-%m-%dT%H:%M:%SZ}"
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": image, "resources": {"requests": {GPU: str(gpus)}}}]
    }
    if on:
        spec["nodeName"] = on
    if secrets:
        spec["imagePullSecrets"] = [{"name": "registry"}]
    meta = {"name": name, "namespace": "ml", "uid": name, "labels": labels or {}}
    return {"metadata": {**meta, "creationTimestamp": stamp}, "spec": spec}


def snap(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    *,
    prewarm_held_gpus: int = 0,
    announced: frozenset[str] = frozenset(),
    paused: bool = False,
) -> PoolSnapshot:
    read = ClusterRead(
        nodes=nodes,  # type: ignore[arg-type]
        pods=pods,  # type: ignore[arg-type]
        homes=[POOL] * len(pods),
        node_pool={n["metadata"]["name"]: POOL for n in nodes},
        now=NOW,
        announced=lambda p: (
            ("cronjob", p["metadata"]["name"]) if p["metadata"]["name"] in announced else None
        ),
    )
    return _snapshot(
        PausedNodePool() if paused else NoNodePool(),  # type: ignore[arg-type]
        POOL,
        read,
        resource=GPU,
        node_units=None,
        prewarm_held_gpus=prewarm_held_gpus,
        launch_problem=None,
        passed=[],
    )


def test_our_placeholders_add_up_per_node_and_pending_ones_hold_launching_nodes() -> None:
    s = snap(
        [node("a"), node("b", ready=False)],
        [
            pod("p1", 4, on="a", labels=OURS),
            pod("p2", 4, on="a", labels=OURS),
            pod("p3", 8, labels=OURS),  # pending: the launching node b is for it
        ],
    )
    assert s.ready_placeholder_gpus == 8
    assert (s.allocatable_gpus, s.launching_gpus) == (8, 8)
    assert s.unbound_placeholder_gpus == 8 and s.in_flight_placeholder_gpus == 8
    assert s.prewarm_gpus == 16
    assert s.held_gpus == 16  # node a (only ours on it) and the launching node b
    assert s.running_gpus == 0 and s.pending_gpus == 0


def test_with_every_placeholder_bound_none_is_in_flight() -> None:
    s = snap([node("a"), node("b", ready=False)], [pod("p1", 8, on="a", labels=OURS)])
    assert s.unbound_placeholder_gpus == 0 and s.in_flight_placeholder_gpus == 0


def test_a_pending_placeholder_without_a_launching_node_holds_nothing_yet() -> None:
    s = snap([node("a")], [pod("real", 8, on="a"), pod("p", 8, labels=OURS)])
    assert s.held_gpus == 0
    assert s.empty_gpus == 0  # nothing is empty out of nothing


def test_a_look_alike_placeholder_is_real_demand() -> None:
    theirs = {lbl.ROLE: lbl.PLACEHOLDER}  # the role label without our managed-by label
    ours_other_role = {lbl.MANAGED_BY: lbl.MANAGER, lbl.ROLE: "trainer"}
    s = snap([node("a")], [pod("x", 4, on="a", labels=theirs), pod("y", 2, labels=ours_other_role)])
    assert s.prewarm_gpus == 0
    assert s.running_gpus == 4 and s.pending_gpus == 2


def test_a_busy_node_strands_its_free_gpus_only_when_ready() -> None:
    s = snap([node("a"), node("b", ready=False)], [pod("x", 2, on="a"), pod("y", 4, on="b")])
    assert s.stranded_gpus == 6
    full, shrunk = node("full"), node("shrunk", gpus=4)  # a GPU lost under running pods
    s = snap([full, shrunk], [pod("f", 8, on="full"), pod("s", 8, on="shrunk")])
    assert s.stranded_gpus == 0  # never negative, never one out of nothing


def test_a_paused_pool_has_no_empty_nodes_and_pays_for_its_pod_less_ones() -> None:
    s = snap([node("a"), node("b")], [pod("x", 8, on="a")], paused=True)
    assert s.paused_until == NOW + 600
    assert s.empty_gpus == 0 and s.held_gpus == 8


def test_a_buffer_without_replicas_or_gpus_asks_for_nothing() -> None:
    def buffer(spec: dict[str, Any], gpus: str | None) -> dict[str, Any]:
        annotations = {lbl.GPUS: gpus} if gpus else {}
        meta = {"labels": {lbl.POOL: POOL}, "annotations": annotations}
        return {"metadata": meta, "spec": spec}

    def held(*buffers: dict[str, Any]) -> int:
        listing = SimpleNamespace(list_capacity_buffers=lambda namespace, labels: list(buffers))
        writer = CapacityBuffers(listing, namespace="forecaster", priority_class="")  # type: ignore[arg-type]
        return CapacityBufferBackend(writer).held_gpus().get(POOL, 0)

    assert held(buffer({"replicas": 2}, "8"), buffer({}, "8")) == 16
    assert held(buffer({"replicas": 3}, None)) == 0


def test_a_buffers_pod_less_nodes_are_ours_unless_paused() -> None:
    s = snap([node("a"), node("b")], [pod("x", 8, on="a")], prewarm_held_gpus=8)
    assert s.held_gpus == 8  # node b, kept free by our CapacityBuffer
    assert s.empty_gpus == 0  # the buffer's node is not empty: it is our prewarm
    assert s.prewarm_gpus == 8
    s = snap([node("a")], [pod("x", 8, on="a")], prewarm_held_gpus=16)  # its nodes not up yet
    assert s.empty_gpus == 0


def test_the_last_hours_pods_give_the_images_most_gpus_first() -> None:
    s = snap(
        [node("a")],
        [
            pod("small", 1, age=600, image="small:1"),
            pod("big", 8, age=1800, image="big:1"),
            pod("twice", 2, age=60, image="mid:1"),
            pod("twice-2", 2, age=120, image="mid:1"),
            pod("hour-old", 16, age=3600, image="old:1"),  # an hour: out of the window
            pod("private", 32, age=30, image="private:1", secrets=True),
        ],
    )
    assert s.recent_images == ("big:1", "mid:1", "small:1")
    assert s.arrivals is not None
    assert s.arrivals.gpus == (32, 36, 37, 45)  # 1, 5, 15, 60 minutes
    assert sorted(uid for uid, _ in s.arrivals.pods) == [
        "big",
        "private",
        "small",
        "twice",
        "twice-2",
    ]


def test_announced_work_is_not_an_arrival() -> None:
    s = snap(
        [node("a")],
        [pod("cron", 8, age=30), pod("other", 2, age=30)],
        announced=frozenset({"cron"}),
    )
    assert s.arrivals is not None and s.arrivals.gpus[0] == 2
    assert s.announced_real_gpus == 8


def test_a_launching_node_a_real_pod_waits_for_is_not_ours() -> None:
    launching = node("b", ready=False)
    s = snap(
        [node("a"), launching], [pod("real", 8, on="a"), pod("r2", 8), pod("p", 8, labels=OURS)]
    )
    assert s.held_gpus == 0  # b is for the real pending pod; our placeholder waits for another
    s = snap([node("a"), launching], [pod("real", 8, on="a")])
    assert s.held_gpus == 0  # nothing of ours pending: a launching node is not ours either
    s = snap([launching], [pod("r1", 8), pod("r2", 8), pod("p", 8, labels=OURS)])
    assert s.held_gpus == 0  # more real pods waiting than launching: never below zero


def test_a_node_without_gpus_adds_none() -> None:
    cpu = node("cpu")
    del cpu["status"]["allocatable"][GPU]
    s = snap([node("a"), cpu], [pod("x", 8, on="a")])
    assert s.allocatable_gpus == 8 and s.empty_gpus == 0


def test_a_paused_pool_with_a_buffer_is_billed_once() -> None:
    s = snap([node("a"), node("b")], [pod("x", 8, on="a")], prewarm_held_gpus=8, paused=True)
    assert s.held_gpus == 8  # node b: kept by the pause, and the buffer's - counted once


def test_cpu_pods_are_no_arrivals() -> None:
    s = snap([node("a")], [pod("cpu", 0, age=30), pod("gpu", 2, age=30)])
    assert s.arrivals is not None and s.arrivals.pods == (("gpu", 2),)
