"""Placeholders: low-priority pause pods that make Karpenter bring GPU nodes up early.

* Each placeholder is a **Job** of one pod, so Kubernetes' own controllers end it without us:
  the Job's ``activeDeadlineSeconds`` counts from the Job's start - unlike a Pod's, which counts
  from the kubelet's start and so never ends a pod that stays Pending - and then
  ``ttlSecondsAfterFinished`` deletes the Job and its pod (garbage collection through the
  owner reference). A dead daemon therefore holds nothing past ``ttl_seconds`` (+ the finished
  TTL for the empty Job object), whatever phase its placeholders were in.
* ``backoffLimit: 0`` and a ``podFailurePolicy`` rule ``FailJob`` on the ``DisruptionTarget``
  condition: a preempted placeholder ends its Job instead of being recreated by the Job
  controller; the next plan decides whether to prewarm again.
* The PriorityClass is shipped with the manifests, never created by the daemon (its
  ServiceAccount may only read it); before creating a placeholder we verify it: a value in
  [-10, 0) (Cluster Autoscaler ignores pods below -10; >= 0 would compete with real work) and
  ``preemptionPolicy: Never`` - placeholders never push anything out, any real pod preempts them.
* The pod requests the pool's accelerator resource (``nvidia.com/gpu`` by default) sized to
  the pool's node shape, selects the NodePool (``karpenter.sh/nodepool``), tolerates the
  accelerator's taint (``accelerators.taint_key``) and carries
  ``karpenter.sh/do-not-disrupt: "true"``: exactly the nodes that hold prewarm are kept from
  consolidation, only while the placeholder exists, with no NodePool write. It runs ``pause`` -
  or the pool's workload image, so the image is already on the node when real pods land.
* It also pulls the images the pool's pods of the last hour ran (``PoolSnapshot.recent_images``:
  only images those pods pulled without a secret - we never use other teams' credentials): one
  init container per image runs a static ``true`` (copied from ``helper_image`` into an
  ``emptyDir`` by a first init container), so any image works, with or without a shell, and
  exits at once - the node keeps the image, the placeholder runs ``pause``.
* Placeholders occupy numbered slots ``0..target-1`` (label ``forecaster.io/slot``): a restart
  or a retried tick fills only empty slots, so there are never duplicates.
* A scale-down deletes, in this order, placeholders with no node yet, those on warm nodes and
  last those on nodes still pulling, so a node freed for real work is ready for it.
* Placeholders that ended without being preempted (expired, renewed, scaled down) are wasted
  prewarm; their GPU-hours are reported for the waste budget.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from forecaster.accelerators import GPU, taint_key
from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import ConflictError, Kube
from forecaster.actuators.manifests import Container, Job, Object, PodSpec, Toleration
from forecaster.errors import ActuationError

log = logging.getLogger(__name__)
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
HELPER_IMAGE = "docker.io/library/busybox:1.36.1-musl"
"""A static busybox: its ``true`` runs in any image of the same architecture."""
WARM_TOOLS = "/forecaster-warm"
FINISHED_TTL_SECONDS = 600
"""A finished placeholder Job (it holds no GPU) is deleted by Kubernetes this long after it
ended; long enough for the daemon to read why it ended (expired = waste, preempted = used)."""
LOWEST_PRIORITY = -10
"""Cluster Autoscaler's default expendable-pod cutoff: pods below it trigger no scale-up."""


@dataclass(frozen=True)
class PlaceholderSpec:
    """What a pool's placeholders look like."""

    pool: str
    gpus: int
    resource: str = GPU
    """The pool's accelerator resource: what a placeholder requests ``gpus`` of."""
    ttl_seconds: int = 3600
    renew_before_seconds: int = 600
    max_renewals_per_tick: int = 2
    """Placeholders created together come due together: renewing a few per tick (oldest first)
    spreads the API writes over the renewal window instead of one slow tick."""
    image: str = PAUSE_IMAGE
    command: tuple[str, ...] = ()
    pull_images: tuple[str, ...] = ()
    """Images new placeholders pull (init containers); set per tick from the pool's pods."""
    max_pulled_images: int = 2
    helper_image: str = HELPER_IMAGE


@dataclass(frozen=True)
class Applied:
    """What one reconcile did."""

    created: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    wasted_gpu_hours: float = 0.0
    used_gpus: int = 0
    """GPUs of placeholders a real pod preempted (prewarm used) since the last reconcile."""

    def __bool__(self) -> bool:
        """Did anything happen (a backend that changed nothing reports ``Applied()``)?"""
        return self != Applied()


class Placeholders:
    """Creates, renews and removes a pool's placeholder Jobs in our namespace."""

    def __init__(self, kube: Kube, *, namespace: str, priority_class: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.priority_class = priority_class

    def verify_priority_class(self) -> None:
        """Refuse (``ActuationError``) unless our PriorityClass exists and is safe to use."""
        found = self.kube.get_priority_class(self.priority_class)
        if found is None:
            raise ActuationError(
                f"PriorityClass {self.priority_class} not found: it ships with deploy/ (the"
                " daemon never creates PriorityClasses); not creating placeholders"
            )
        value = found.get("value")
        policy = found.get("preemptionPolicy", "PreemptLowerPriority")
        if not isinstance(value, int) or not LOWEST_PRIORITY <= value < 0 or policy != "Never":
            raise ActuationError(
                f"PriorityClass {self.priority_class} has value {value!r} and preemptionPolicy"
                f" {policy!r}; placeholders need {LOWEST_PRIORITY} <= value < 0 and Never, or"
                " they could preempt real work (or be ignored by Cluster Autoscaler):"
                " not creating placeholders"
            )

    def jobs(self, pool: str | None = None) -> list[Job]:
        """Our placeholder Jobs (of one pool, or all), finished ones included."""
        return self.kube.list_jobs(namespace=self.namespace, labels=lbl.placeholder_selector(pool))

    def apply(self, spec: PlaceholderSpec, *, target: int, now: int) -> Applied:
        """Converge the pool to ``target`` live placeholders; see the module docstring."""
        jobs = self.jobs(spec.pool)
        standing = self._pod_standing(spec.pool)
        wasted = 0.0
        used = 0
        deleted: list[str] = []
        live: list[Job] = []
        renewals = 0
        for job in sorted(jobs, key=lambda j: _created_at(j, default=now)):  # oldest first
            age = now - _created_at(job, default=now)
            ended = _ended(job)
            is_running = standing.get(_name(job)) == _WARM
            due = is_running and age >= spec.ttl_seconds - spec.renew_before_seconds
            if ended is not None or age >= spec.ttl_seconds:
                if ended == "preempted":
                    used += _gpus(job)
                else:
                    wasted += _gpus(job) * min(age, spec.ttl_seconds) / 3600  # expired unused
                deleted.append(self.delete(job))
            elif due and renewals < spec.max_renewals_per_tick:
                renewals += 1
                wasted += _gpus(job) * age / 3600  # renewed: its lifetime went unused
                deleted.append(self.delete(job))
            else:
                live.append(job)
        live.sort(key=lambda j: _scale_down_order(j, standing, now))
        while len(live) > target:
            job = live.pop(0)
            wasted += _gpus(job) * max(0, now - _created_at(job, default=now)) / 3600
            deleted.append(self.delete(job))
        taken = {int(j["metadata"]["labels"].get(lbl.SLOT, -1)) for j in live}
        free_slots = [s for s in range(target) if s not in taken][: max(0, target - len(live))]
        if free_slots:
            self.verify_priority_class()
        created = [self._create(spec, slot=slot, now=now) for slot in free_slots]
        return Applied(tuple(created), tuple(deleted), wasted, used)

    def remove_bare_pods(self, pool: str | None = None) -> list[str]:
        """Delete placeholder pods without an owner (left by versions before placeholders
        were Jobs)."""
        removed = []
        for pod in self.kube.list_pods(
            namespace=self.namespace, labels=lbl.placeholder_selector(pool)
        ):
            if not pod["metadata"].get("ownerReferences"):
                _require_ours(pod)
                self.kube.delete_pod(self.namespace, _name(pod))
                removed.append(_name(pod))
        return removed

    def _pod_standing(self, pool: str) -> dict[str, int]:
        """Per placeholder Job of the pool with a pod bound to a node: ``_WARM`` once the pod
        is Running (its init containers have pulled the images), else ``_PULLING``. A Job
        missing here has no pod on a node yet."""
        pods = self.kube.list_pods(namespace=self.namespace, labels=lbl.placeholder_selector(pool))
        standing = {}
        for pod in pods:
            running = pod.get("status", {}).get("phase") == "Running"
            if running or pod.get("spec", {}).get("nodeName"):
                standing[pod["metadata"]["labels"].get(lbl.JOB_NAME, "")] = (
                    _WARM if running else _PULLING
                )
        return standing

    def delete(self, job: Job) -> str:
        """Delete one of our placeholder Jobs (never one without our label); its name."""
        _require_ours(job)
        self.kube.delete_job(self.namespace, _name(job))
        return _name(job)

    def _create(self, spec: PlaceholderSpec, *, slot: int, now: int) -> str:
        body = placeholder_job(
            spec, namespace=self.namespace, priority_class=self.priority_class, slot=slot, now=now
        )
        name = str(body["metadata"]["name"])
        try:
            self.kube.create_job(self.namespace, body)
        except ConflictError:  # created by an earlier try of this tick - or by someone else
            self._require_existing_is_ours(name, spec.pool)
        return name

    def _require_existing_is_ours(self, name: str, pool: str) -> None:
        """A Job of that name exists: it counts as created only if it is our placeholder of
        ``pool``; anything else is this pool's actuation error, naming the conflict."""
        existing = next(
            (j for j in self.kube.list_jobs(namespace=self.namespace) if _name(j) == name), None
        )
        labels = (existing or {}).get("metadata", {}).get("labels") or {}
        ours = {lbl.MANAGED_BY: lbl.MANAGER, lbl.ROLE: lbl.PLACEHOLDER, lbl.POOL: pool}
        if existing is None or any(labels.get(k) != v for k, v in ours.items()):
            owner = labels.get(lbl.MANAGED_BY, "no managed-by label")
            raise ActuationError(
                f"placeholder Job {self.namespace}/{name} already exists and is not ours"
                f" ({owner}, pool {labels.get(lbl.POOL)!r}): not counting it as prewarm"
            )


def placeholder_pod_spec(spec: PlaceholderSpec, *, priority_class: str) -> PodSpec:
    """The pod spec of one placeholder (also the CapacityBuffer's PodTemplate)."""
    container: Container = {
        "name": "prewarm",
        "image": spec.image,
        "resources": {
            "requests": {spec.resource: str(spec.gpus), "cpu": "10m", "memory": "16Mi"},
            "limits": {spec.resource: str(spec.gpus), "memory": "64Mi"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    if spec.command:
        container["command"] = list(spec.command)
    pod: PodSpec = {
        "priorityClassName": priority_class,
        "terminationGracePeriodSeconds": 0,
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "nodeSelector": {lbl.NODEPOOL_LABEL: spec.pool},
        "tolerations": [  # the taint nodes of the pool's accelerator usually carry
            Toleration(key=taint_key(spec.resource), operator="Exists", effect="NoSchedule")
        ],
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65535,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
    }
    if spec.pull_images:
        pod["volumes"] = [{"name": "warm-tools", "emptyDir": {"sizeLimit": "8Mi"}}]
        pod["initContainers"] = [
            _puller("warm-tools", spec.helper_image, ["cp", "/bin/busybox", f"{WARM_TOOLS}/true"]),
            *(
                _puller(f"pull-{i}", image, [f"{WARM_TOOLS}/true"])
                for i, image in enumerate(spec.pull_images)
            ),
        ]
    return pod


_UNBOUND, _WARM, _PULLING = 0, 1, 2
"""Where a placeholder's pod stands, in the order a scale-down deletes them."""


def _scale_down_order(job: Job, standing: dict[str, int], now: int) -> tuple[int, int]:
    """Which placeholders a scale-down deletes first: those with no node yet (they hold
    nothing; the youngest first), then those on warm nodes (the oldest first, nearest their
    renewal), and last those on nodes still pulling (the youngest first).

    Why warm before pulling: a freed node takes the next pod that fits, and kube-scheduler
    preempts a placeholder only when no node fits. Freeing a node mid-pull after a burst sent
    announced jobs to wait on that pull while warm nodes stayed held (docs/findings.md,
    "Announced jobs over 30 s: bound to a node still pulling").
    """
    at = standing.get(_name(job), _UNBOUND)
    created = _created_at(job, default=now)
    return at, created if at == _WARM else -created


def _puller(name: str, image: str, command: list[str]) -> Container:
    """An init container that only makes the node pull ``image`` (it exits at once)."""
    return {
        "name": name,
        "image": image,
        "command": command,
        "resources": {
            "requests": {"cpu": "10m", "memory": "16Mi"},
            "limits": {"memory": "64Mi"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "warm-tools", "mountPath": WARM_TOOLS}],
    }


def placeholder_job(
    spec: PlaceholderSpec, *, namespace: str, priority_class: str, slot: int, now: int
) -> Job:
    """The Job manifest of one placeholder (see the module docstring for every field's why)."""
    labels = {
        lbl.MANAGED_BY: lbl.MANAGER,
        lbl.ROLE: lbl.PLACEHOLDER,
        lbl.POOL: spec.pool,
        lbl.SLOT: str(slot),
    }
    annotations = {
        lbl.GPUS: str(spec.gpus),
        lbl.CREATED_AT: str(now),
        lbl.FORMAT: str(lbl.OBJECT_FORMAT),
    }
    pod_spec = placeholder_pod_spec(spec, priority_class=priority_class)
    pod_spec["activeDeadlineSeconds"] = spec.ttl_seconds  # the pod's own, once it runs
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"forecaster-{spec.pool}-{slot}-{now}",
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {
            "activeDeadlineSeconds": spec.ttl_seconds,
            "ttlSecondsAfterFinished": FINISHED_TTL_SECONDS,
            "backoffLimit": 0,
            "completions": 1,
            "parallelism": 1,
            "podFailurePolicy": {
                "rules": [
                    {
                        "action": "FailJob",
                        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                    }
                ]
            },
            "template": {
                "metadata": {
                    "labels": dict(labels),
                    "annotations": {**annotations, lbl.DO_NOT_DISRUPT: "true"},
                },
                "spec": pod_spec,
            },
        },
    }


def _ended(job: Job) -> str | None:
    """Why a finished Job ended: "preempted" (a real pod took its node), else "ended"."""
    for condition in job.get("status", {}).get("conditions") or []:
        if condition.get("type") in ("Failed", "Complete") and condition.get("status") == "True":
            return "preempted" if condition.get("reason") == "PodFailurePolicy" else "ended"
    return None


def _require_ours(obj: Object) -> None:
    if obj["metadata"].get("labels", {}).get(lbl.MANAGED_BY) != lbl.MANAGER:
        raise AssertionError(f"refusing to delete {_name(obj)}: not managed by forecaster")


def _name(obj: Object) -> str:
    return str(obj["metadata"]["name"])


def _gpus(obj: Object) -> int:
    return int(obj["metadata"].get("annotations", {}).get(lbl.GPUS, 0))


def _created_at(obj: Object, *, default: int) -> int:
    return int(obj["metadata"].get("annotations", {}).get(lbl.CREATED_AT, default))
