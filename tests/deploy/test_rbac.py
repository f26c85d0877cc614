"""RBAC is exactly what the code uses: run the daemon's whole repertoire against the API double,
turn every request into (apiGroup, resource, verb, scope) and compare with the live overlay.

The scenario covers start-up (guardrails, PriorityClass read, Lease), the pod watch, ticks
that prewarm (placeholder Jobs, the opt-in NodePool pause, state ConfigMap), a hand-off
(deletes, restore), the CapacityBuffer backend (buffer and PodTemplate), the ``cleanup
--expired`` CronJob and an uninstall ``cleanup`` that also removes a bare placeholder pod left
by an older version.
Nothing used may be missing from the manifests and nothing granted may go unused; NodePool
access stays within the configured names.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import pytest

from forecaster.actuators.kube import Kube, api_client
from forecaster.app import cleanup
from forecaster.app.build import build_cluster_service
from forecaster.core.planner import Mode
from forecaster.service.clock import FakeClock
from forecaster.settings import KueuePoolSettings, Settings, load_settings
from tests.deploy.renders import FORECAST_ONLY, RENDERS, ROOT, grants
from tests.factories import cluster_queue, flavor
from tests.kubeapi.cluster import ClusterSim
from tests.kubeapi.server import _PATH, RESOURCES, KubeApiDouble, Request
from tests.service.fakes import T0, LiveSource, calm_history

POOL = "gpu-a100"
KUEUE = KueuePoolSettings()  # a Kueue-gated pool reads quota, flavors and workloads
SETUP_WRITES = {
    # what the test itself (and the double's scheduler/Karpenter) writes, not the daemon
    ("karpenter.sh", "nodepools", "create", "cluster"),
    ("", "nodes", "create", "cluster"),
    ("", "pods", "create", "ml"),
    ("", "pods", "update", "ml"),
    ("", "nodes", "update", "cluster"),
}
VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def used(requests: list[Request]) -> set[tuple[str, str, str, str]]:
    out = set()
    for request in requests:
        match = _PATH.match(request.path)
        if match is None:
            continue
        resource = match.group("resource")
        group = RESOURCES[resource].group_version.rpartition("/")[0]
        verb = VERBS.get(request.method) or ("get" if match.group("name") else "list")
        verb = "watch" if request.query.get("watch") in ("true", "1") else verb
        out.add((group, resource, verb, match.group("ns") or "cluster"))
    return out


def deploy_settings(tmp_path: Path, **changes: object) -> Settings:
    path = tmp_path / "forecaster.yaml"
    path.write_text((ROOT / "deploy" / "base" / "forecaster.yaml").read_text())
    settings = load_settings(path, env={})
    pool = settings.pools[0].model_copy(update=changes)
    planning = settings.planning.model_copy(update={"protect_nodepools": True})  # opt-in covered
    return settings.model_copy(
        update={"pools": (pool,), "models_dir": tmp_path / "models", "planning": planning}
    )


def scenario(api: KubeApiDouble, settings: Settings) -> None:
    sim = ClusterSim(api)
    api.store.objects.pop(("leases", "forecaster", "forecaster-leader"), None)  # a new install
    if api.kueue and ("resourceflavors", "", "a100") not in api.store.objects:
        api.put("resourceflavors", flavor("a100", POOL))
        api.put("clusterqueues", cluster_queue("research", "all", 64, 8))
    if api.store.objects.get(("nodepools", "", POOL)) is None:
        sim.add_nodepool(POOL, limit_gpus=200)
        sim.add_node(POOL)
        sim.submit("job", POOL, 8)
        sim.step()
    clock = FakeClock(datetime.fromtimestamp(T0, tz=UTC))
    kube = Kube(api_client(host=api.url), dry_run=settings.dry_run, backoff_seconds=0.01)
    service = build_cluster_service(settings, kube, identity="replica-a", clock=clock)
    service.daemon.reconciler.source = LiveSource(T0 - 2 * 86400, calm_history())
    service.renew()
    service.reconcile()
    assert service.watch is not None  # watch_pods is on by default: one short watch
    service.watch.watch_seconds = 1
    service.watch.sync()
    clock.set(datetime.fromtimestamp(T0 + 30, tz=UTC))
    service.renew()
    service.reconcile()  # second tick: the state ConfigMap is updated
    state = service.daemon.reconciler.state.pool(POOL)
    state.budget = dataclasses.replace(state.budget, mode=Mode.HANDED_OFF)
    nodepool = api.objects("nodepools")[0]
    if settings.planning.protect_nodepools and not settings.dry_run:  # Argo CD edits it
        nodepool["spec"]["disruption"]["consolidateAfter"] = "7m"  # (restore: an Event)
        api.store.replace(("nodepools", "", POOL), nodepool)
    clock.set(datetime.fromtimestamp(T0 + 60, tz=UTC))
    service.renew()
    service.reconcile()  # hand-off: placeholders deleted, NodePool restored
    service.stop()
    kube = Kube(api_client(host=api.url), dry_run=settings.dry_run, backoff_seconds=0.01)
    namespace = settings.planning.placeholders.namespace
    expired = cleanup.cleanup(kube, namespace=namespace, expired_at=T0 + 7 * 86400)  # CronJob
    assert expired.failed == []
    legacy = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"forecaster-{POOL}-0-1",
            "namespace": "forecaster",
            "labels": {
                "app.kubernetes.io/managed-by": "forecaster",
                "forecaster.io/role": "placeholder",
                "forecaster.io/pool": POOL,
            },
        },
        "spec": {"containers": [{"name": "prewarm", "image": "registry.k8s.io/pause:3.10"}]},
    }
    api.store.objects.pop(("pods", "forecaster", legacy["metadata"]["name"]), None)
    api.put("pods", legacy)  # a bare placeholder from before placeholders were Jobs
    undone = cleanup.cleanup(kube, namespace=namespace, wall=lambda: T0 + 90.0)  # uninstall
    assert undone.failed == []


@pytest.mark.parametrize("name", ["kustomize-live", "helm-default"])
def test_live_rbac_is_exactly_what_the_code_uses(name: str, tmp_path: Path) -> None:
    with KubeApiDouble(capacity_buffers=True, kueue=True) as api:
        scenario(api, deploy_settings(tmp_path, backend="placeholders", kueue=KUEUE))
        buffers = deploy_settings(tmp_path, backend="capacitybuffer")
        scenario(api, buffers.model_copy(update={"state_config_map": "forecaster-state-2"}))
        need = used(api.requests) - SETUP_WRITES
        nodepool_names = {r.path.rsplit("/", 1)[1] for r in api.requests if "/nodepools/" in r.path}
    objects = RENDERS[name]()
    granted = grants(objects)
    missing = {u for u in need if u not in granted and (u[0], u[1], u[2], "cluster") not in granted}
    assert missing == set(), f"the code uses permissions the manifests do not grant: {missing}"
    unused = {
        g
        for g in granted
        if not any(u[:3] == g[:3] and (g[3] == "cluster" or u[3] == g[3]) for u in need)
    }
    assert unused == set(), f"the manifests grant permissions the code never uses: {unused}"
    (nodepools,) = [
        r
        for o in objects
        if o["kind"] == "ClusterRole"
        for r in o["rules"]
        if "nodepools" in r["resources"] and "patch" in r["verbs"]
    ]
    # no resourceNames: a pool that left the config is restored too (the guard is in the code)
    assert "resourceNames" not in nodepools and nodepool_names


@pytest.mark.parametrize("name", FORECAST_ONLY)
def test_forecast_only_rbac_covers_a_dry_run_replica(name: str, tmp_path: Path) -> None:
    with KubeApiDouble() as api:
        settings = deploy_settings(tmp_path).model_copy(update={"dry_run": True})
        scenario(api, settings)
        need = used(api.requests) - SETUP_WRITES
    granted = grants(RENDERS[name]())
    missing = {u for u in need if u not in granted and (u[0], u[1], u[2], "cluster") not in granted}
    assert missing == set()


def test_every_write_names_forecaster_as_field_manager(tmp_path: Path) -> None:
    """GitOps: managedFields then name exactly our fields (README: the ignoreDifferences
    recipe), across the daemon's whole repertoire."""
    with KubeApiDouble(capacity_buffers=True, kueue=True) as api:
        scenario(api, deploy_settings(tmp_path, backend="placeholders", kueue=KUEUE))
        buffers = deploy_settings(tmp_path, backend="capacitybuffer")
        scenario(api, buffers.model_copy(update={"state_config_map": "forecaster-state-2"}))
        ours = [
            r
            for r in api.requests
            if r.method in ("POST", "PUT", "PATCH") and not used([r]) <= SETUP_WRITES
        ]
    assert {used([r]).pop()[1] for r in ours} >= {"jobs", "nodepools", "capacitybuffers", "leases"}
    unnamed = [(r.method, r.path) for r in ours if r.query.get("fieldManager") != "forecaster"]
    assert unnamed == []
