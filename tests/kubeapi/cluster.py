"""A minimal scheduler + Karpenter behind the API double, stepped explicitly by tests.

``step()`` at the double's clock, in order:

1. nodes whose provisioning delay has passed become Ready;
2. running pods past ``activeDeadlineSeconds`` fail with reason DeadlineExceeded;
3. pending pods, highest priority first, bind to a Ready node of their NodePool
   (``nodeSelector karpenter.sh/nodepool``) with enough free ``nvidia.com/gpu`` whose taints
   they tolerate; failing that, a pod may **preempt** lower-priority pods on one node (unless
   its ``preemptionPolicy`` is Never) - victims are deleted and a Preempted event recorded;
4. Karpenter launches nodes for what is still pending, minus what launching nodes will hold,
   never beyond the NodePool's ``spec.limits["nvidia.com/gpu"]``;
5. Karpenter removes nodes empty for ``spec.disruption.consolidateAfter`` unless a disruption
   budget with ``nodes: "0"`` covers the Empty reason.

Pod admission (on create) resolves ``priorityClassName`` to ``spec.priority`` and
``preemptionPolicy`` as the real admission plugin does, and refuses unknown classes (403).
"""

from __future__ import annotations

import math
import re
from typing import Any

from tests.kubeapi.server import KubeApiDouble
from tests.kubeapi.store import ApiError, Obj

POOL_LABEL = "karpenter.sh/nodepool"
GPU = "nvidia.com/gpu"
GPU_TAINT = {"key": GPU, "value": "true", "effect": "NoSchedule"}


def pod_gpus(pod: Obj) -> int:
    total = 0
    for container in pod["spec"]["containers"]:
        resources = container.get("resources", {})
        total += int(
            resources.get("requests", {}).get(GPU, resources.get("limits", {}).get(GPU, 0))
        )
    return total


def active(pod: Obj) -> bool:
    return pod.get("status", {}).get("phase", "Pending") in ("Pending", "Running")


def duration_seconds(text: str) -> float:
    if text == "Never":
        return math.inf
    return sum(
        int(n) * {"s": 1, "m": 60, "h": 3600}[u] for n, u in re.findall(r"(\d+)([smh])", text)
    )


class ClusterSim:
    """Plays the scheduler and Karpenter for the objects in ``api``."""

    def __init__(
        self, api: KubeApiDouble, *, provision_seconds: float = 60, gpus_per_node: int = 8
    ) -> None:
        self.api = api
        self.provision_seconds = provision_seconds
        self.gpus_per_node = gpus_per_node
        self.preempted: list[str] = []
        self._serial = 0
        original = api._dispatch

        def admitting(
            method: str,
            resource: str,
            namespace: str,
            name: str | None,
            query: dict[str, str],
            content_type: str,
            body: Any,
        ) -> tuple[int, Obj]:
            if method == "POST" and resource == "pods" and name is None:
                self._admit(body)
            return original(method, resource, namespace, name, query, content_type, body)

        api._dispatch = admitting  # type: ignore[method-assign]

    # ---- test helpers ----------------------------------------------------------------------
    def add_nodepool(
        self,
        name: str,
        *,
        limit_gpus: int | None,
        consolidate_after: str = "30s",
        budgets: list[Obj] | None = None,
    ) -> Obj:
        spec: Obj = {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "gpu",
                    },
                    "requirements": [
                        {
                            "key": "karpenter.k8s.aws/instance-gpu-count",
                            "operator": "Gt",
                            "values": ["0"],
                        }
                    ],
                    "taints": [GPU_TAINT],
                }
            },
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": consolidate_after,
            },
        }
        if budgets is not None:
            spec["disruption"]["budgets"] = budgets
        if limit_gpus is not None:
            spec["limits"] = {GPU: str(limit_gpus), "cpu": "1000"}
        return self.api.put(
            "nodepools",
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": name, "labels": {"team": "ml"}},
                "spec": spec,
            },
        )

    def add_node(self, pool: str, *, ready: bool = True) -> Obj:
        self._serial += 1
        now = self.api.clock
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"{pool}-node-{self._serial}",
                "labels": {POOL_LABEL: pool},
                "annotations": {
                    "sim/ready-at": str(now if ready else now + self.provision_seconds)
                },
            },
            "spec": {"taints": [GPU_TAINT]},
            "status": {
                "capacity": {GPU: str(self.gpus_per_node)},
                "allocatable": {GPU: str(self.gpus_per_node)},
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        }
        return self.api.put("nodes", node)

    def submit(
        self,
        name: str,
        pool: str,
        gpus: int,
        *,
        namespace: str = "ml",
        priority_class: str | None = None,
    ) -> Obj:
        pod: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": "train"}},
            "spec": {
                "containers": [
                    {
                        "name": "train",
                        "image": "ml/train:1",
                        "resources": {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}},
                    }
                ],
                "nodeSelector": {POOL_LABEL: pool},
                "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
            },
        }
        if priority_class:
            pod["spec"]["priorityClassName"] = priority_class
        self._admit(pod)
        return self.api.put("pods", pod)

    # ---- the simulation ----------------------------------------------------------------------
    def step(self) -> None:
        with self.api.store.lock:
            self._ready_nodes()
            self._expire_pods()
            self._schedule()
            self._provision()
            self._consolidate()

    def _admit(self, pod: Obj) -> None:
        name = pod["spec"].get("priorityClassName")
        if not name:
            pod["spec"].setdefault("priority", 0)
            return
        try:
            pc = self.api.store.get(("priorityclasses", "", name))
        except ApiError:
            raise ApiError(
                403, "Forbidden", f"no PriorityClass with name {name} was found"
            ) from None
        pod["spec"]["priority"] = pc["value"]
        pod["spec"]["preemptionPolicy"] = pc.get("preemptionPolicy", "PreemptLowerPriority")

    def _save(self, resource: str, obj: Obj) -> None:
        meta = obj["metadata"]
        key = (resource, meta.get("namespace", ""), meta["name"])
        self.api.store.replace(key, {**obj, "metadata": {**meta, "resourceVersion": None}})

    def _ready_nodes(self) -> None:
        for node in self.api.store.list("nodes", None):
            ready_at = float(node["metadata"]["annotations"]["sim/ready-at"])
            condition = node["status"]["conditions"][0]
            if condition["status"] != "True" and self.api.clock >= ready_at:
                condition["status"] = "True"
                self._save("nodes", node)

    def _expire_pods(self) -> None:
        for pod in self.api.store.list("pods", None):
            deadline = pod["spec"].get("activeDeadlineSeconds")
            started_text = pod["metadata"].get("annotations", {}).get("sim/started-at")
            started = float(started_text) if started_text else None
            if (
                deadline
                and started is not None
                and active(pod)
                and self.api.clock - started >= deadline
            ):
                pod["status"].update(phase="Failed", reason="DeadlineExceeded")
                self._save("pods", pod)

    def _free(self, node: Obj, pods: list[Obj]) -> int:
        used = sum(
            pod_gpus(p)
            for p in pods
            if p["spec"].get("nodeName") == node["metadata"]["name"] and active(p)
        )
        return int(node["status"]["allocatable"][GPU]) - used

    def _schedule(self) -> None:
        pods = self.api.store.list("pods", None)
        nodes = [
            n
            for n in self.api.store.list("nodes", None)
            if n["status"]["conditions"][0]["status"] == "True"
        ]
        pending = [p for p in pods if active(p) and not p["spec"].get("nodeName")]
        pending.sort(
            key=lambda p: (
                -p["spec"].get("priority", 0),
                p["metadata"]["creationTimestamp"],
                p["metadata"]["name"],
            )
        )
        for pod in pending:
            pods = self.api.store.list("pods", None)
            candidates = [n for n in nodes if self._fits_node(pod, n)]
            node = next((n for n in candidates if self._free(n, pods) >= pod_gpus(pod)), None)
            if (
                node is None
                and pod["spec"].get("preemptionPolicy", "PreemptLowerPriority") != "Never"
            ):
                node = self._preempt_for(pod, candidates, pods)
            if node is not None:
                pod["spec"]["nodeName"] = node["metadata"]["name"]
                pod.setdefault("status", {}).update(
                    phase="Running", startTime=self.api.store.timestamp()
                )
                pod["metadata"].setdefault("annotations", {})["sim/started-at"] = str(
                    self.api.clock
                )
                self._save("pods", pod)

    def _fits_node(self, pod: Obj, node: Obj) -> bool:
        selector = pod["spec"].get("nodeSelector", {})
        if any(node["metadata"]["labels"].get(k) != v for k, v in selector.items()):
            return False
        tolerations = pod["spec"].get("tolerations", [])
        return all(
            any(
                t.get("key") == taint["key"]
                and (t.get("operator") == "Exists" or t.get("value") == taint["value"])
                for t in tolerations
            )
            for taint in node["spec"].get("taints", [])
        )

    def _preempt_for(self, pod: Obj, candidates: list[Obj], pods: list[Obj]) -> Obj | None:
        priority = pod["spec"].get("priority", 0)
        for node in candidates:
            on_node = [
                p
                for p in pods
                if p["spec"].get("nodeName") == node["metadata"]["name"] and active(p)
            ]
            victims = sorted(
                (p for p in on_node if p["spec"].get("priority", 0) < priority),
                key=lambda p: p["spec"].get("priority", 0),
            )
            free, chosen = self._free(node, pods), []
            for victim in victims:
                if free >= pod_gpus(pod):
                    break
                chosen.append(victim)
                free += pod_gpus(victim)
            if free >= pod_gpus(pod):
                for victim in chosen:
                    meta = victim["metadata"]
                    self.api.store.delete(("pods", meta["namespace"], meta["name"]))
                    self.preempted.append(meta["name"])
                return node
        return None

    def _provision(self) -> None:
        pods = self.api.store.list("pods", None)
        nodes = self.api.store.list("nodes", None)
        for pool in self.api.store.list("nodepools", None):
            name = pool["metadata"]["name"]
            waiting = sum(
                pod_gpus(p)
                for p in pods
                if active(p)
                and not p["spec"].get("nodeName")
                and p["spec"].get("nodeSelector", {}).get(POOL_LABEL) == name
            )
            pool_nodes = [n for n in nodes if n["metadata"]["labels"].get(POOL_LABEL) == name]
            launching = sum(
                int(n["status"]["allocatable"][GPU])
                for n in pool_nodes
                if n["status"]["conditions"][0]["status"] != "True"
            )
            deficit = waiting - launching
            limit = pool["spec"].get("limits", {}).get(GPU)
            total = sum(int(n["status"]["allocatable"][GPU]) for n in pool_nodes)
            while deficit > 0 and (limit is None or total + self.gpus_per_node <= int(limit)):
                self.add_node(name, ready=False)
                deficit -= self.gpus_per_node
                total += self.gpus_per_node

    def _consolidate(self) -> None:
        pods = self.api.store.list("pods", None)
        pools = {p["metadata"]["name"]: p for p in self.api.store.list("nodepools", None)}
        for node in self.api.store.list("nodes", None):
            annotations = node["metadata"]["annotations"]
            empty = not any(
                p["spec"].get("nodeName") == node["metadata"]["name"] and active(p) for p in pods
            )
            if not empty or node["status"]["conditions"][0]["status"] != "True":
                if "sim/empty-since" in annotations:
                    del annotations["sim/empty-since"]
                    self._save("nodes", node)
                continue
            if "sim/empty-since" not in annotations:
                annotations["sim/empty-since"] = str(self.api.clock)
                self._save("nodes", node)
                continue
            pool = pools.get(node["metadata"]["labels"][POOL_LABEL])
            if pool is None or self._blocked(pool):
                continue
            after = duration_seconds(pool["spec"]["disruption"].get("consolidateAfter", "0s"))
            if self.api.clock - float(annotations["sim/empty-since"]) >= after:
                self.api.store.delete(("nodes", "", node["metadata"]["name"]))

    @staticmethod
    def _blocked(pool: Obj) -> bool:
        for budget in pool["spec"]["disruption"].get("budgets", []):
            if budget["nodes"] in ("0", "0%") and "Empty" in budget.get("reasons", ["Empty"]):
                return True
        return False
