"""A minimal scheduler + Karpenter behind the API double, stepped explicitly by tests.

``step()`` at the double's clock, in order:

1. nodes whose provisioning delay has passed become Ready;
2. the Job controller: a Job gets ``status.startTime`` on its first sync and one pod from its
   template (owned by the Job, labelled ``batch.kubernetes.io/job-name``); past the Job's
   ``activeDeadlineSeconds`` (counted from ``startTime``, whatever the pod's phase) it fails
   with reason DeadlineExceeded and its pods are deleted; a failed pod fails the Job
   (``backoffLimit: 0``; reason PodFailurePolicy when a ``FailJob`` rule matches the pod's
   DisruptionTarget condition); ``ttlSecondsAfterFinished`` after finishing, the Job and its
   pods are deleted (the TTL controller and the garbage collector);
3. running pods past ``activeDeadlineSeconds`` fail with reason DeadlineExceeded (kubelet);
4. pending pods, highest priority first, bind to a Ready node of their NodePool
   (``nodeSelector karpenter.sh/nodepool``) with enough free ``nvidia.com/gpu`` whose taints
   they tolerate; failing that, a pod may **preempt** lower-priority pods on one node (unless
   its ``preemptionPolicy`` is Never) - bare victims are deleted, a Job's victims fail with a
   DisruptionTarget condition (as the scheduler marks them before deleting);
5. Karpenter launches nodes for what is still pending, minus what launching nodes will hold,
   never beyond the NodePool's ``spec.limits["nvidia.com/gpu"]``;
6. Karpenter removes nodes empty for ``spec.disruption.consolidateAfter`` unless a disruption
   budget with ``nodes: "0"`` covers the Empty reason.

Pod admission (on create) resolves ``priorityClassName`` to ``spec.priority`` and
``preemptionPolicy`` as the real admission plugin does, and refuses unknown classes (403).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from kubernetes.utils.quantity import parse_quantity as _client_quantity

from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.kubeapi.store import ApiError, Obj

POOL_LABEL = "karpenter.sh/nodepool"
GPU = "nvidia.com/gpu"
GPU_TAINT = {"key": GPU, "value": "true", "effect": "NoSchedule"}
parse_quantity: Callable[[object], Decimal] = _client_quantity
"""The client's own parser: the scheduler this plays reads quantities apart from the daemon."""


def taint_for(resource: str) -> Obj:
    """The taint nodes of an accelerator carry (the device plugins' convention: MIG nodes are
    tainted like whole-GPU ones, others by their resource name)."""
    key = GPU if resource.startswith("nvidia.com/mig-") else resource
    return {"key": key, "value": "true", "effect": "NoSchedule"}


def pod_gpus(pod: Obj, resource: str = GPU) -> int:
    """Units of ``resource`` a pod requests, read as the API server reads quantities (``1Ki``
    is 1024: the client library's parser, not the code under test's); one the double cannot
    read counts as none."""
    total = 0
    for container in pod["spec"]["containers"]:
        resources = container.get("resources", {})
        value = resources.get("requests", {}).get(
            resource, resources.get("limits", {}).get(resource, 0)
        )
        try:
            total += max(0, int(parse_quantity(value)))
        except (ValueError, ArithmeticError):
            continue
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
        self,
        api: KubeApiDouble,
        *,
        provision_seconds: float = 60,
        gpus_per_node: int = 8,
        priority_class: bool = True,
        buffer_controller: bool = False,
        image_pull_seconds: float = 0,
    ) -> None:
        """``priority_class``: install the placeholder PriorityClass as deploy/ does;
        ``buffer_controller``: Karpenter acts on CapacityBuffers (its feature gate is on);
        ``image_pull_seconds``: a pod's containers become ready this long after it is scheduled
        onto a node that has not pulled its image yet (PodScheduled -> ContainersReady)."""
        self.api = api
        self.image_pull_seconds = image_pull_seconds
        self.buffer_controller = buffer_controller
        self._buffer_gpus: dict[str, int] = {}
        self.provision_seconds = provision_seconds
        self.gpus_per_node = gpus_per_node
        self.preempted: list[str] = []
        self.no_capacity: set[str] = set()
        """NodePools the cloud has no capacity for: launches fail with Karpenter's Warning."""
        self._serial = 0
        self.vcjobs: dict[tuple[str, str], tuple[str, int, int]] = {}
        """Volcano jobs by PodGroup (namespace, name): (pool, pods, units per pod)."""
        self.resources: dict[str, str] = {}
        """Each NodePool's accelerator resource (``nvidia.com/gpu`` unless added otherwise)."""
        api.admission.append(self._admit_pod)
        if priority_class and ("priorityclasses", "", "forecaster-placeholder") not in (
            api.store.objects
        ):
            self.add_priority_class()

    # ---- test helpers ----------------------------------------------------------------------
    def add_nodepool(
        self,
        name: str,
        *,
        limit_gpus: int | None,
        consolidate_after: str = "30s",
        budgets: list[Obj] | None = None,
        weight: int | None = None,
        labels: dict[str, str] | None = None,
        resource: str = GPU,
    ) -> Obj:
        """An accelerator NodePool (``resource``, default GPUs; tainted for it; its limit and
        nodes in its unit); ``labels`` go on its nodes' template."""
        self.resources[name] = resource
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
                    "taints": [taint_for(resource)],
                }
            },
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": consolidate_after,
            },
        }
        if budgets is not None:
            spec["disruption"]["budgets"] = budgets
        if weight is not None:
            spec["weight"] = weight
        if labels:
            spec["template"]["metadata"] = {"labels": labels}
        if limit_gpus is not None:
            spec["limits"] = {resource: str(limit_gpus), "cpu": "1000"}
        return self.api.put(
            "nodepools",
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": name, "labels": {"team": "ml"}},
                "spec": spec,
            },
        )

    def running_pools(self, *names: str, limit_gpus: int = 200) -> None:
        """NodePools of one Ready 8-GPU node each, running one 8-GPU job (``job-<pool>``)."""
        for name in names:
            self.add_nodepool(name, limit_gpus=limit_gpus)
            self.add_node(name)
            self.submit(f"job-{name}", name, 8)
        self.step()

    def busy_pool(self, name: str, *, limit_gpus: int = 200) -> None:
        """A NodePool with two Ready 8-GPU nodes running two 8-GPU jobs (most tests' start)."""
        self.add_nodepool(name, limit_gpus=limit_gpus)
        for _ in range(2):
            self.add_node(name)
        for i in range(2):
            self.submit(f"job-{i}", name, 8)
        self.step()

    def add_priority_class(
        self,
        name: str = "forecaster-placeholder",
        *,
        value: int = -10,
        preemption_policy: str = "Never",
    ) -> Obj:
        """The PriorityClass deploy/ ships (the daemon only reads it); replaces one of that name."""
        self.api.store.objects.pop(("priorityclasses", "", name), None)
        return self.api.put(
            "priorityclasses",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                "preemptionPolicy": preemption_policy,
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
            "spec": {"taints": [taint_for(self.resource_of(pool))]},
            "status": {
                "capacity": {self.resource_of(pool): str(self.gpus_per_node)},
                "allocatable": {self.resource_of(pool): str(self.gpus_per_node)},
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True" if ready else "False",
                        "lastTransitionTime": self.api.store.timestamp(),
                    }
                ],
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
        node_selector: dict[str, str] | None = None,
        affinity_terms: list[list[Obj]] | None = None,
        tolerate_gpu: bool = True,
        resource: str | None = None,
    ) -> Obj:
        """A real GPU pod for ``pool`` (by nodeSelector), or selecting nodes the given way:
        ``node_selector`` replaces it, ``affinity_terms`` are required nodeSelectorTerms;
        ``resource``: what it requests (default: the pool's accelerator)."""
        resource = resource or self.resource_of(pool)
        pod: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": "train"}},
            "spec": {
                "containers": [
                    {
                        "name": "train",
                        "image": "ml/train:1",
                        "resources": {
                            "requests": {resource: str(gpus)},
                            "limits": {resource: str(gpus)},
                        },
                    }
                ],
                "nodeSelector": {POOL_LABEL: pool},
                "tolerations": [
                    {
                        "key": taint_for(resource)["key"],
                        "operator": "Exists",
                        "effect": "NoSchedule",
                    }
                ],
            },
        }
        if priority_class:
            pod["spec"]["priorityClassName"] = priority_class
        if node_selector is not None:
            pod["spec"]["nodeSelector"] = node_selector
        if affinity_terms is not None:
            terms = [{"matchExpressions": term} for term in affinity_terms]
            pod["spec"]["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
                }
            }
        if not tolerate_gpu:
            del pod["spec"]["tolerations"]
        self._admit(pod)
        return self.api.put("pods", pod)

    def submit_vcjob(
        self,
        name: str,
        pool: str,
        pods: int,
        per_pod: int,
        *,
        queue: str = "default",
        labels: dict[str, str] | None = None,
    ) -> Obj:
        """A Volcano job: its PodGroup (``Pending``, ``minMember`` pods, ``minResources`` of
        the pool's resource) and no pod - Volcano's job controller creates them only once the
        group is enqueued (``_enqueue_podgroups``)."""
        resource = self.resource_of(pool)
        group: Obj = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "ml", "labels": labels or {}},
            "spec": {
                "minMember": pods,
                "minResources": {resource: str(pods * per_pod)},
                "queue": queue,
            },
            "status": {"phase": "Pending"},
        }
        self.vcjobs[("ml", name)] = (pool, pods, per_pod)
        return self.api.put("podgroups", group)

    # ---- the simulation ----------------------------------------------------------------------
    def step(self) -> None:
        with self.api.store.lock:
            self._ready_nodes()
            self._start_containers()
            self._run_jobs()
            self._expire_pods()
            self._enqueue_podgroups()
            self._schedule()
            self._serve_buffers()
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
                condition["lastTransitionTime"] = self.api.store.timestamp()
                self._save("nodes", node)

    def _run_jobs(self) -> None:
        now = self.api.clock
        pods = self.api.store.list("pods", None)
        for job in self.api.store.list("jobs", None):
            meta, spec = job["metadata"], job["spec"]
            status = job.setdefault("status", {})
            own = [
                p
                for p in pods
                if any(
                    o.get("uid") == meta["uid"] for o in p["metadata"].get("ownerReferences", [])
                )
            ]
            annotations = meta.setdefault("annotations", {})
            finished_at = annotations.get("sim/finished-at")
            if finished_at is not None:
                ttl = spec.get("ttlSecondsAfterFinished")
                if ttl is not None and now - float(finished_at) >= ttl:
                    self.api.store.delete(("jobs", meta["namespace"], meta["name"]))
                    self.api.collect_garbage(meta["uid"])
                continue
            if "sim/started-at" not in annotations:
                annotations["sim/started-at"] = str(now)
                status["startTime"] = self.api.store.timestamp()
            started = float(annotations["sim/started-at"])
            deadline = spec.get("activeDeadlineSeconds")
            failed = [p for p in own if p.get("status", {}).get("phase") == "Failed"]
            reason = None
            if deadline is not None and now - started >= deadline:
                reason = "DeadlineExceeded"
            elif failed:
                reason = (
                    "PodFailurePolicy"
                    if self._fail_job_rule(job, failed[0])
                    else ("BackoffLimitExceeded")
                )
            elif not own and "sim/pod-created" in annotations:
                reason = "BackoffLimitExceeded"  # its pod was deleted before it finished
            if reason is not None:
                for pod in own:
                    if active(pod):
                        self.api.store.delete(("pods", meta["namespace"], pod["metadata"]["name"]))
                annotations["sim/finished-at"] = str(now)
                status.update(
                    active=0,
                    failed=1,
                    conditions=[
                        {"type": "Failed", "status": "True", "reason": reason},
                    ],
                )
                self._save("jobs", job)
                continue
            if not own:
                self._create_job_pod(job)
                annotations["sim/pod-created"] = str(now)
                status["active"] = 1
            self._save("jobs", job)

    @staticmethod
    def _fail_job_rule(job: Obj, pod: Obj) -> bool:
        conditions = {
            c["type"] for c in pod.get("status", {}).get("conditions", []) if c["status"] == "True"
        }
        for rule in (job["spec"].get("podFailurePolicy") or {}).get("rules", []):
            wanted = {c["type"] for c in rule.get("onPodConditions", [])}
            if rule["action"] == "FailJob" and wanted & conditions:
                return True
        return False

    def _create_job_pod(self, job: Obj) -> None:
        self._serial += 1
        meta, template = job["metadata"], job["spec"]["template"]
        labels = {
            **template.get("metadata", {}).get("labels", {}),
            "batch.kubernetes.io/job-name": meta["name"],
            "job-name": meta["name"],
        }
        pod: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{meta['name']}-{self._serial:05d}",
                "namespace": meta["namespace"],
                "labels": labels,
                "annotations": dict(template.get("metadata", {}).get("annotations", {})),
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": json.loads(json.dumps(template["spec"])),
            "status": {"phase": "Pending"},
        }
        self._admit(pod)
        self.api.put("pods", pod)

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

    def resource_of(self, pool: str) -> str:
        """The accelerator resource of NodePool ``pool``."""
        return self.resources.get(pool, GPU)

    def _node_resource(self, node: Obj) -> str:
        return self.resource_of(node["metadata"]["labels"].get(POOL_LABEL, ""))

    def _allocatable(self, node: Obj) -> int:
        return int(node["status"]["allocatable"][self._node_resource(node)])

    def _enqueue_podgroups(self) -> None:
        """Volcano: a Pending PodGroup is enqueued once the Ready nodes of its pool have room
        for its ``minResources`` beside the real pods (placeholders yield: they are preempted),
        then its job's pods are created; with no such room it stays Pending, pods or no pods."""
        for (namespace, name), (pool, count, per_pod) in list(self.vcjobs.items()):
            try:
                group = self.api.store.get(("podgroups", namespace, name))
            except ApiError:
                continue
            if group.get("status", {}).get("phase") != "Pending":
                continue
            resource = self.resource_of(pool)
            pods = self.api.store.list("pods", None)
            ready = [
                n
                for n in self.api.store.list("nodes", None)
                if n["metadata"]["labels"].get(POOL_LABEL) == pool
                and n["status"]["conditions"][0]["status"] == "True"
            ]
            real = sum(
                pod_gpus(p, resource)
                for p in pods
                if active(p)
                and p["spec"].get("nodeName") in {n["metadata"]["name"] for n in ready}
                and p["metadata"]["namespace"] != "forecaster"
            )
            if sum(self._allocatable(n) for n in ready) - real < count * per_pod:
                continue
            group["status"] = {"phase": "Inqueue"}
            self._save("podgroups", group)
            for i in range(count):
                pod = self.submit(f"{name}-{i}", pool, per_pod, priority_class=None)
                pod["metadata"].setdefault("annotations", {})["scheduling.k8s.io/group-name"] = name
                self._save("pods", pod)

    def _free(self, node: Obj, pods: list[Obj]) -> int:
        resource = self._node_resource(node)
        used = sum(
            pod_gpus(p, resource)
            for p in pods
            if p["spec"].get("nodeName") == node["metadata"]["name"] and active(p)
        )
        return self._allocatable(node) - used

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
            node = next(
                (
                    n
                    for n in candidates
                    if self._free(n, pods) >= pod_gpus(pod, self._node_resource(n))
                ),
                None,
            )
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
                self._pull(pod, node)
                self._save("pods", pod)

    def _pull(self, pod: Obj, node: Obj) -> None:
        """PodScheduled now; ContainersReady after the image pull, unless the node has the image."""
        now = self.api.store.timestamp()
        images = {c["image"] for c in pod["spec"]["containers"]}
        annotations = node["metadata"]["annotations"]
        pulled = set(filter(None, annotations.get("sim/images", "").split(",")))
        cold = bool(images - pulled) and self.image_pull_seconds > 0
        annotations["sim/images"] = ",".join(sorted(pulled | images))
        self._save("nodes", node)
        ready_at = self.api.clock + (self.image_pull_seconds if cold else 0)
        pod["metadata"]["annotations"]["sim/containers-ready-at"] = str(ready_at)
        pod["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            {
                "type": "ContainersReady",
                "status": "False" if cold else "True",
                "lastTransitionTime": now,
            },
        ]

    def _start_containers(self) -> None:
        for pod in self.api.store.list("pods", None):
            ready_at = pod["metadata"].get("annotations", {}).get("sim/containers-ready-at")
            conditions = pod.get("status", {}).get("conditions") or []
            waiting = [
                c for c in conditions if c["type"] == "ContainersReady" and c["status"] != "True"
            ]
            if ready_at is not None and waiting and self.api.clock >= float(ready_at):
                waiting[0].update(status="True", lastTransitionTime=self.api.store.timestamp())
                self._save("pods", pod)

    def _admit_pod(self, resource: str, body: Any) -> None:
        if resource == "pods":
            self._admit(body)

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
            resource = self._node_resource(node)
            for victim in victims:
                if free >= pod_gpus(pod, resource):
                    break
                chosen.append(victim)
                free += pod_gpus(victim, resource)
            if free >= pod_gpus(pod, resource):
                for victim in chosen:
                    meta = victim["metadata"]
                    self.preempted.append(meta["name"])
                    if not meta.get("ownerReferences"):
                        self.api.store.delete(("pods", meta["namespace"], meta["name"]))
                        continue
                    victim.setdefault("status", {}).update(
                        phase="Failed",
                        conditions=[
                            {
                                "type": "DisruptionTarget",
                                "status": "True",
                                "reason": "PreemptionByScheduler",
                            }
                        ],
                    )
                    self._save("pods", victim)
                return node
        return None

    def _serve_buffers(self) -> None:
        """Karpenter's CapacityBuffer controller: per buffer, min(replicas, limits) chunks of its
        PodTemplate become virtual pods that new capacity is provisioned for and that keep
        empty nodes from consolidation; status.replicas and the conditions report it."""
        self._buffer_gpus = {}
        if not self.buffer_controller:
            return
        pods = self.api.store.list("pods", None)
        nodes = self.api.store.list("nodes", None)
        for buffer in self.api.store.list("capacitybuffers", None):
            meta, spec = buffer["metadata"], buffer["spec"]
            ref = spec.get("podTemplateRef", {}).get("name", "")
            try:
                template = self.api.store.get(("podtemplates", meta["namespace"], ref))
            except ApiError:
                continue
            pool = template["template"]["spec"].get("nodeSelector", {}).get(POOL_LABEL, "")
            chunk = pod_gpus(template["template"], self.resource_of(pool))
            chunks = int(spec.get("replicas", 0))
            limit = spec.get("limits", {}).get(self.resource_of(pool))
            if limit is not None and chunk:
                chunks = min(chunks, int(limit) // chunk)
            need = chunks * chunk
            self._buffer_gpus[pool] = self._buffer_gpus.get(pool, 0) + need
            free = sum(
                self._free(n, pods)
                for n in nodes
                if n["metadata"]["labels"].get(POOL_LABEL) == pool
            )
            at = self.api.store.timestamp()
            buffer["status"] = {
                "replicas": chunks,
                "conditions": [
                    {
                        "type": "ReadyForProvisioning",
                        "status": "True",
                        "reason": "Ready",
                        "message": "",
                        "lastTransitionTime": at,
                    },
                    {
                        "type": "Provisioning",
                        "status": "True",
                        "reason": "FitsExistingCapacity" if free >= need else "RequiresNewCapacity",
                        "message": "",
                        "lastTransitionTime": at,
                    },
                ],
            }
            self._save("capacitybuffers", buffer)

    def _provision(self) -> None:
        pods = self.api.store.list("pods", None)
        nodes = self.api.store.list("nodes", None)
        for pool in self.api.store.list("nodepools", None):
            name = pool["metadata"]["name"]
            resource = self.resource_of(name)
            waiting = sum(
                pod_gpus(p, resource)
                for p in pods
                if active(p)
                and not p["spec"].get("nodeName")
                and p["spec"].get("nodeSelector", {}).get(POOL_LABEL) == name
                and pod_gpus(p, resource) <= self.gpus_per_node  # no instance type fits more
            )
            pool_nodes = [n for n in nodes if n["metadata"]["labels"].get(POOL_LABEL) == name]
            launching = sum(
                self._allocatable(n)
                for n in pool_nodes
                if n["status"]["conditions"][0]["status"] != "True"
            )
            deficit = waiting - launching
            buffered = self._buffer_gpus.get(name, 0)
            if buffered:  # pods and buffer chunks beyond the free GPUs of ready + launching nodes
                free = sum(self._free(n, pods) for n in pool_nodes)
                deficit = max(deficit, waiting + buffered - free)
            limit = pool["spec"].get("limits", {}).get(resource)
            total = sum(self._allocatable(n) for n in pool_nodes)
            if deficit > 0 and name in self.no_capacity:
                self._insufficient_capacity(name)
                continue
            while deficit > 0 and (limit is None or total + self.gpus_per_node <= int(limit)):
                self.add_node(name, ready=False)
                deficit -= self.gpus_per_node
                total += self.gpus_per_node

    def _insufficient_capacity(self, pool: str) -> None:
        """Karpenter's launch of a NodeClaim failed: a Warning Event on the (deleted) NodeClaim,
        recorded in ``default`` as for every cluster-scoped object."""
        self._serial += 1
        claim = f"{pool}-{self._serial:05d}"
        at = self.api.store.timestamp()
        self.api.put(
            "events",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"{claim}.{self._serial}", "namespace": "default"},
                "involvedObject": {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodeClaim",
                    "name": claim,
                },
                "reason": "InsufficientCapacityError",
                "message": f"NodeClaim {claim} event: creating instance, insufficient capacity,"
                " InsufficientInstanceCapacity: We currently do not have sufficient p5.48xlarge"
                " capacity in the Availability Zone you requested (us-east-1a).",
                "type": "Warning",
                "source": {"component": "karpenter"},
                "firstTimestamp": at,
                "lastTimestamp": at,
                "count": 1,
            },
        )

    def _consolidate(self) -> None:
        pods = self.api.store.list("pods", None)
        pools = {p["metadata"]["name"]: p for p in self.api.store.list("nodepools", None)}
        held = dict(self._buffer_gpus)  # empty nodes holding buffer chunks are kept
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
            pool_name = node["metadata"]["labels"][POOL_LABEL]
            if held.get(pool_name, 0) > 0:
                held[pool_name] -= self._allocatable(node)
                continue
            pool = pools.get(pool_name)
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
