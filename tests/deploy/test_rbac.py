"""RBAC is exactly what the code uses, per ServiceAccount: run each workload's whole repertoire
against the API double, turn every request into (apiGroup, resource, verb, scope, name) and
compare with the rules bound to the ServiceAccount that workload runs as.

The manifests create the state and kill-switch ConfigMaps and the leader Lease (``create``
cannot be limited by name), so the double starts with those objects as rendered. Phases: the
daemon (``forecaster``: start-up guardrails, PriorityClass read, Lease, pod watch, ticks that
prewarm with placeholder Jobs and the opt-in NodePool pause, state, a hand-off, the
CapacityBuffer backend, reading the models' ConfigMaps); training (``forecaster-train``: fetch
and publish the models); the ``cleanup --expired`` CronJob (``forecaster-expire``); the uninstall
``cleanup`` (``forecaster-cleanup``), which also removes a bare placeholder pod left by an older
version. Nothing used may be missing from the rules bound to that ServiceAccount, nothing granted
to it may go unused, and a rule limited by ``resourceNames`` must name every object used.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from forecaster.actuators.coordination.model_configmaps import ModelConfigMaps
from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.labels import TEMPLATE_HASH
from forecaster.actuators.nodepools import NodePools
from forecaster.actuators.prewarm.capacitybuffers import CapacityBuffers
from forecaster.actuators.prewarm.placeholders import Placeholders, PlaceholderSpec
from forecaster.app import cleanup
from forecaster.app.build import build_cluster_service
from forecaster.app.model_sharing import fetch_models
from forecaster.core.planner import Mode
from forecaster.service.clock import FakeClock
from forecaster.settings import KueuePoolSettings, Settings, load_settings
from forecaster.testing.fakes import T0, LiveSource, calm_history
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import (
    API_PATH,
    PENDING_PATH,
    RESOURCES,
    KubeApiDouble,
    Request,
)
from forecaster.testing.objects import cronjob
from tests.deploy.renders import FORECAST_ONLY, RENDERS, ROOT
from tests.factories import cluster_queue, flavor, jobset

POOL = "gpu-a100"
HOME = "forecaster"
PLACEHOLDERS = "forecaster-placeholders"
PRIORITY = "forecaster-placeholder"
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
MANIFEST_OBJECTS = {
    ("Lease", "forecaster-leader"),
    ("ConfigMap", "forecaster-state"),
    ("ConfigMap", "forecaster-control"),
}
"""What the manifests create for the daemon, which may then only get and update them by name."""
Use = tuple[str, str, str, str, str | None]
"""(apiGroup, resource, verb, scope, name): scope is 'cluster' or the namespace; name None for
create, list and watch (which resourceNames cannot limit)."""
Rule = tuple[str, str, str, str, frozenset[str] | None]


def used(requests: list[Request]) -> set[Use]:
    out = set()
    for request in requests:
        pending = PENDING_PATH.match(request.path)  # Kueue's visibility API: a subresource
        if pending is not None:
            group = "visibility.kueue.x-k8s.io"
            out.add((group, "clusterqueues/pendingworkloads", "get", "cluster", pending["cq"]))
            continue
        match = API_PATH.match(request.path)
        if match is None:
            continue
        resource = match.group("resource")
        group = RESOURCES[resource].group_version.rpartition("/")[0]
        verb = VERBS.get(request.method) or ("get" if match.group("name") else "list")
        verb = "watch" if request.query.get("watch") in ("true", "1") else verb
        name = match.group("name") if verb not in ("create", "list", "watch") else None
        out.add((group, resource, verb, match.group("ns") or "cluster", name))
    return out


def bound(objects: list[dict[str, Any]], account: str) -> set[Rule]:
    """The rules of every Role and ClusterRole bound to ServiceAccount ``account``."""
    roles = {
        (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")): o
        for o in objects
        if o["kind"].endswith("Role")
    }
    rules: set[Rule] = set()
    for binding in objects:
        if not binding["kind"].endswith("RoleBinding"):
            continue
        if not any(
            s["kind"] == "ServiceAccount" and s["name"] == account for s in binding["subjects"]
        ):
            continue
        ref = binding["roleRef"]
        namespaced = binding["kind"] == "RoleBinding"
        scope = binding["metadata"]["namespace"] if namespaced else "cluster"
        role = roles[(ref["kind"], ref["name"], scope if ref["kind"] == "Role" else None)]
        for rule in role["rules"]:
            names = frozenset(rule["resourceNames"]) if "resourceNames" in rule else None
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        rules.add((group, resource, verb, scope, names))
    return rules


def allows(rule: Rule, use: Use) -> bool:
    group, resource, verb, scope, names = rule
    return (
        (group, resource, verb) == use[:3]
        and scope in ("cluster", use[3])
        and (names is None or use[4] in names)
    )


def deploy_settings(tmp_path: Path, **changes: object) -> Settings:
    path = tmp_path / "forecaster.yaml"
    path.write_text((ROOT / "deploy" / "base" / "forecaster.yaml").read_text())
    settings = load_settings(path, env={})
    pool = settings.pools[0].model_copy(update=changes)
    planning = settings.planning.model_copy(update={"protect_nodepools": True})  # opt-in covered
    return settings.model_copy(
        update={"pools": (pool,), "models_dir": tmp_path / "models", "planning": planning}
    )


def install(api: KubeApiDouble, objects: list[dict[str, Any]]) -> None:
    """What the manifests create for the daemon, as rendered (a new install)."""
    for obj in objects:
        kind, name = obj["kind"], obj["metadata"]["name"]
        if (kind, name) in MANIFEST_OBJECTS:
            resource = {"Lease": "leases", "ConfigMap": "configmaps"}[kind]
            api.store.objects.pop((resource, "forecaster", name), None)
            api.put(resource, {**obj, "metadata": {**obj["metadata"], "namespace": "forecaster"}})


def scenario(
    api: KubeApiDouble, settings: Settings, objects: list[dict[str, Any]]
) -> dict[str, list[Request]]:
    """Each workload's requests, by the ServiceAccount it runs as."""
    sim = ClusterSim(api)
    install(api, objects)
    if api.kueue and ("resourceflavors", "", "a100") not in api.store.objects:
        api.put("resourceflavors", flavor("a100", POOL))
        api.put("clusterqueues", cluster_queue("research", "all", 64, 8))
    if api.jobsets and not api.objects("jobsets"):  # notice: a TrainJob's GPU stage waiting
        api.put("jobsets", jobset(pool=POOL))
        api.put("cronjobs", cronjob(pool=POOL))
    if api.store.objects.get(("nodepools", "", POOL)) is None:
        sim.add_nodepool(POOL, limit_gpus=200)
        sim.add_node(POOL)
        sim.submit("job", POOL, 8)
        sim.step()
    if api.volcano and not api.objects("podgroups"):  # notice: a gang Volcano holds back
        sim.submit_vcjob("gang", POOL, pods=2, per_pod=8)
    phases: dict[str, list[Request]] = {}
    began = len(api.requests)
    clock = FakeClock(datetime.fromtimestamp(T0, tz=UTC))
    kube = Kube(api_client(host=api.url), dry_run=settings.dry_run, backoff_seconds=0.01)
    service = build_cluster_service(settings, kube, identity="replica-a", clock=clock)
    service.daemon.reconciler.source = LiveSource(T0 - 2 * 86400, calm_history())
    service.renew()
    service.reconcile()
    templates = [
        ("podtemplates", PLACEHOLDERS, t["metadata"]["name"])
        for t in api.objects("podtemplates", PLACEHOLDERS)
    ]
    for key in templates:  # as a version before the digest wrote it: the next tick replaces it
        template = api.store.objects[key]
        del template["metadata"]["annotations"][TEMPLATE_HASH]
    assert service.watch is not None  # watch_pods is on by default: one short watch
    service.watch.watch_seconds = 1
    service.watch.sync()
    clock.set(datetime.fromtimestamp(T0 + 30, tz=UTC))
    service.renew()
    service.reconcile()  # second tick: the state ConfigMap is updated
    state = service.daemon.reconciler.state.pool(POOL)
    state.budget = dataclasses.replace(state.budget, mode=Mode.HANDED_OFF)
    for resource in ("jobsets", "cronjobs"):  # the announced work has run: nothing left to cover
        for obj in api.objects(resource):
            meta = obj["metadata"]
            api.store.objects.pop((resource, meta.get("namespace", ""), meta["name"]), None)
    nodepool = api.objects("nodepools")[0]
    if settings.planning.protect_nodepools and not settings.dry_run:  # Argo CD edits it
        nodepool["spec"]["disruption"]["consolidateAfter"] = "7m"  # (restore: an Event)
        api.store.replace(("nodepools", "", POOL), nodepool)
    clock.set(datetime.fromtimestamp(T0 + 60, tz=UTC))
    service.renew()
    service.reconcile()  # hand-off: placeholders deleted, NodePool restored
    assert service.reload_models is not None
    service.reload_models()  # models_store: configmap - every replica installs the champions
    service.stop()
    phases["forecaster"] = api.requests[began:]
    began = len(api.requests)
    writer = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    mirror = ModelConfigMaps(writer, namespace="forecaster")  # the training CronJob
    fetch_models(settings, mirror)
    mirror.publish(POOL, version="20261130T000000Z-1ecaccdb", text="{}")
    mirror.publish(POOL, version="20261207T000000Z-2ecaccdb", text="{}")  # an update
    phases["forecaster-train"] = api.requests[began:]
    held(writer, now=T0)  # what the daemon held when it died: past its deadlines a week later
    held(writer, now=T0, namespace=HOME)  # and what an earlier version left beside us
    bare_placeholder(api)
    began = len(api.requests)
    expired = cleanup.cleanup(
        writer,
        namespace=HOME,
        placeholders=PLACEHOLDERS,
        expired_at=T0 + 7 * 86400,
    )
    assert expired.failed == []
    phases["forecaster-expire"] = api.requests[began:]
    bare_placeholder(api)
    held(writer, now=T0 + 7 * 86400)  # what a running daemon holds at uninstall
    held(writer, now=T0 + 7 * 86400, namespace=HOME)  # and what 0.2 left, not yet expired
    began = len(api.requests)
    undone = cleanup.cleanup(  # uninstall
        writer,
        namespace=HOME,
        placeholders=PLACEHOLDERS,
        wall=lambda: T0 + 90.0,
        sleep=lambda seconds: None,
    )
    assert undone.failed == []
    phases["forecaster-cleanup"] = api.requests[began:]
    return phases


def bare_placeholder(api: KubeApiDouble) -> None:
    """A bare placeholder pod as versions before 0.2 left it, in our own namespace."""
    legacy = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"forecaster-{POOL}-0-1",
            "namespace": HOME,  # where earlier versions kept them
            "labels": {
                "app.kubernetes.io/managed-by": "forecaster",
                "forecaster.io/role": "placeholder",
                "forecaster.io/pool": POOL,
            },
        },
        "spec": {"containers": [{"name": "prewarm", "image": "registry.k8s.io/pause:3.10"}]},
    }
    api.store.objects.pop(("pods", HOME, legacy["metadata"]["name"]), None)
    api.put("pods", legacy)  # a bare placeholder from before placeholders were Jobs


def held(kube: Kube, *, now: int, namespace: str = PLACEHOLDERS) -> None:
    """Prewarm as the daemon holds it: a placeholder, a buffer (where served), a NodePool pause
    (``namespace`` HOME: as earlier versions held it, beside our accounts)."""
    NodePools(kube).protect(POOL, consolidate_after="30m", now=now, seconds=3600)
    spec = PlaceholderSpec(pool=POOL, gpus=8)
    if kube.serves_capacity_buffers(namespace):
        buffers = CapacityBuffers(kube, namespace=namespace, priority_class=PRIORITY)
        buffers.apply(spec, replicas=1, now=now)
    Placeholders(kube, namespace=namespace, priority_class=PRIORITY).apply(spec, target=1, now=now)


def live_phases(tmp_path: Path, objects: list[dict[str, Any]]) -> dict[str, set[Use]]:
    """Both backends' whole repertoire, by ServiceAccount."""
    need: dict[str, set[Use]] = {}
    with KubeApiDouble(
        capacity_buffers=True, kueue=True, jobsets=True, kueue_visibility=True, volcano=True
    ) as api:
        for backend in ("placeholders", "capacitybuffer"):
            settings = deploy_settings(tmp_path, backend=backend, kueue=KUEUE)
            for account, requests in scenario(api, settings, objects).items():
                need.setdefault(account, set()).update(u for u in used(requests))
    return need


ACCOUNTS = ("forecaster", "forecaster-train", "forecaster-expire", "forecaster-cleanup")


@pytest.mark.parametrize("name", ["kustomize-live", "helm-default"])
def test_each_service_account_holds_exactly_what_its_workload_uses(
    name: str, tmp_path: Path
) -> None:
    objects = RENDERS[name]()
    need = live_phases(tmp_path, objects)
    workloads = {spec["serviceAccountName"] for spec in pod_specs(objects)}
    assert workloads == set(ACCOUNTS)  # each workload runs as its own ServiceAccount
    for account in ACCOUNTS:
        rules = bound(objects, account)
        missing = {u for u in need[account] if not any(allows(r, u) for r in rules)}
        assert missing == set(), f"{account} uses what it is not granted: {missing}"
        unused = {r for r in rules if not any(allows(r, u) for u in need[account])}
        assert unused == set(), f"{account} is granted what it never uses: {unused}"
    nodepool_rules = [r for r in bound(objects, "forecaster-expire") if r[1] == "nodepools"]
    # no resourceNames: a pool that left the config is restored too (the guard is in the code)
    assert nodepool_rules and all(r[4] is None for r in nodepool_rules)
    daemon = bound(objects, "forecaster")
    writes = {(r[1], r[2], r[4]) for r in daemon if r[1] in ("configmaps", "leases")}
    assert writes == {
        ("configmaps", "get", None),  # the kill switch and the models, read only
        ("configmaps", "update", frozenset({"forecaster-state"})),
        ("leases", "get", frozenset({"forecaster-leader"})),
        ("leases", "update", frozenset({"forecaster-leader"})),
    }


def pod_specs(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for obj in objects:
        if obj["kind"] == "Deployment" or obj["kind"] == "Job":
            out.append(obj["spec"]["template"]["spec"])
        elif obj["kind"] == "CronJob":
            out.append(obj["spec"]["jobTemplate"]["spec"]["template"]["spec"])
    return out


@pytest.mark.parametrize("name", FORECAST_ONLY)
def test_forecast_only_rbac_covers_a_dry_run_replica(name: str, tmp_path: Path) -> None:
    objects = RENDERS[name]()
    with KubeApiDouble() as api:
        settings = deploy_settings(tmp_path).model_copy(update={"dry_run": True})
        requests = scenario(api, settings, objects)["forecaster"]
    rules = bound(objects, "forecaster")
    missing = {u for u in used(requests) if not any(allows(r, u) for r in rules)}
    assert missing == set()


def test_every_write_names_forecaster_as_field_manager(tmp_path: Path) -> None:
    """GitOps: managedFields then name exactly our fields (README: the ignoreDifferences
    recipe), across the daemon's whole repertoire."""
    objects = RENDERS["kustomize-live"]()
    with KubeApiDouble(capacity_buffers=True, kueue=True, jobsets=True) as api:
        ours = []
        for backend in ("placeholders", "capacitybuffer"):
            settings = deploy_settings(tmp_path, backend=backend, kueue=KUEUE)
            for requests in scenario(api, settings, objects).values():
                ours += [r for r in requests if r.method in ("POST", "PUT", "PATCH")]
    assert {next(iter(used([r])))[1] for r in ours} >= {
        "jobs",
        "nodepools",
        "capacitybuffers",
        "leases",
    }
    unnamed = [(r.method, r.path) for r in ours if r.query.get("fieldManager") != "forecaster"]
    assert unnamed == []


POD_MAKERS = {
    "pods",
    "jobs",
    "cronjobs",
    "deployments",
    "replicasets",
    "statefulsets",
    "daemonsets",
    "replicationcontrollers",
}
"""What can start a pod (and so run as any ServiceAccount of its namespace)."""


@pytest.mark.parametrize("name", sorted(RENDERS))
def test_no_account_can_be_borrowed(name: str) -> None:
    """A pod runs as a ServiceAccount of its own namespace: an account that can create
    something that starts pods where another of our accounts lives could act as that account
    (the daemon clearing its kill switch as forecaster-train). No account of ours can start a
    pod where any account of ours lives, and only accounts whose workload talks to the API
    server mount a token."""
    objects = RENDERS[name]()
    homes = {
        o["metadata"]["namespace"]
        for o in objects
        if o["kind"] == "ServiceAccount" and o["metadata"]["name"] in ACCOUNTS
    }
    assert homes == {"forecaster"}
    for account in ACCOUNTS:
        makers = {
            (resource, scope)
            for _, resource, verb, scope, _ in bound(objects, account)
            if resource in POD_MAKERS and verb == "create"
        }
        borrowable = {m for m in makers if m[1] == "cluster" or m[1] in homes}
        assert borrowable == set(), f"{account} can start pods beside our accounts: {borrowable}"
    tokens = {
        o["metadata"]["name"]
        for o in objects
        if o["kind"] == "ServiceAccount" and o.get("automountServiceAccountToken", True)
    }
    assert tokens == {a for a in ACCOUNTS if bound(objects, a)}  # each talks to the API server


def test_placeholders_create_only_where_no_account_of_ours_lives(tmp_path: Path) -> None:
    """The daemon's Jobs (live render) are created in the placeholders' namespace only."""
    objects = RENDERS["kustomize-live"]()
    creates = {
        (resource, scope)
        for _, resource, verb, scope, _ in bound(objects, "forecaster")
        if verb == "create"
    }
    assert ("jobs", PLACEHOLDERS) in creates
    assert {scope for resource, scope in creates if resource != "events"} == {PLACEHOLDERS}
