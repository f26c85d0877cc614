"""Argo Workflows (argoproj.io/v1alpha1): GPU steps of running workflows waiting on others.

Argo creates a step's pod only once its dependencies are done, so the GPU stage of a running
workflow has no pod while its upstream runs. Per running workflow (``status.phase: Running``,
not suspended or shut down), for each running DAG and each running steps template:

* a DAG task not started yet (no node in ``status.nodes``) whose dependencies
  (``dependencies``, or the task names in ``depends``) have all started - the next hop only;
  its first tasks start with the DAG and give no notice;
* a step of a steps template whose group has not started while the group before it has;

with a GPU container (or script) template, is one item: GPUs per pod from its resources, pods
= ``withItems`` / ``withSequence.count`` fan-out (1 with ``withParam``: unknown until its
upstream ends); the pool is the one its pod fits (the template's ``nodeSelector``,
``tolerations`` and ``affinity``, else the workflow's); earliest start: the latest end among the
dependencies - ``finishedAt`` for one done, ``startedAt`` + ``estimatedDuration`` (Argo's
estimate from earlier runs of the same template) for one running; latest start: that + the
grace, so an upstream that overruns its estimate lets the item expire (charged as not come)
rather than hold prewarm while it runs. Nothing is announced while a dependency runs with no
estimate (unknown: announced once it is done) or after one failed (the step may never run).
A step a ``when`` skips gets a node (``Skipped``) and leaves the reading as if it came: the
source's precision does not see it (a known gap).

Its pods are marked by the labels and annotations Argo puts on them
(``workflows.argoproj.io/workflow``, ``workflows.argoproj.io/node-name``): the histories leave
out the pods of waiting steps, and keep a workflow's first steps, which give no notice.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from typing import Any, cast

from forecaster.actuators.manifests import Pod, PodTemplateSpec
from forecaster.actuators.notice.base import ApiKind, NoticeContext, Obj, PodMarker
from forecaster.actuators.quantities import timestamp_seconds
from forecaster.core.notice import AnnouncedItem

PHASE_LABEL = "workflows.argoproj.io/phase"
WORKFLOWS = ApiKind("argoproj.io", "v1alpha1", "workflows", labels=f"{PHASE_LABEL}=Running")
"""Running Workflows only, by the phase label Argo's controller keeps on each: a cluster keeps
many finished ones, and a Workflow's ``status.nodes`` can be large."""
WORKFLOW_LABEL = "workflows.argoproj.io/workflow"
NODE_NAME_ANNOTATION = "workflows.argoproj.io/node-name"
DONE = ("Succeeded", "Skipped", "Omitted")
FAILED = ("Failed", "Error")
_TASK_NAME = re.compile(r"([A-Za-z0-9][\w-]*)(?:\.[A-Za-z]+)?")


class ArgoWorkflowSource:
    """The ``argo`` notice source."""

    name: str = "argo"
    kinds: tuple[ApiKind, ...] = (WORKFLOWS,)

    def announce(self, obj: Obj, context: NoticeContext) -> list[AnnouncedItem]:
        spec, status = obj["spec"], obj.get("status") or {}
        if status.get("phase") != "Running" or spec.get("suspend") or spec.get("shutdown"):
            return []  # the label said Running; the status is the truth
        templates = {t["name"]: t for t in spec.get("templates") or []}
        nodes = list((status.get("nodes") or {}).values())
        items = []
        for waiting, upstream in _waiting(nodes, templates):
            eta = _eta(upstream, context.now)
            if eta is not None:
                meta = obj["metadata"]
                key = f"workflow {meta['namespace']}/{meta['name']}/{waiting['name']}"
                items += step_item(
                    waiting,
                    spec,
                    earliest=eta,
                    latest=eta + context.grace_seconds,
                    source=self.name,
                    key=key,
                    context=context,
                )
        return items

    def marker(self, context: NoticeContext) -> PodMarker:
        """A pod of a step that waits on others (the steps this source announces), by the
        workflow label and the node-name annotation Argo puts on its pods."""
        waiting: set[tuple[object, object, str]] = set()
        for obj in context.objects.get(WORKFLOWS, []):
            meta, spec = obj.get("metadata"), obj.get("spec")
            try:
                steps = (
                    _dependent_steps(spec.get("templates") or []) if isinstance(spec, dict) else ()
                )
            except Exception:  # one workflow's templates cost its own pods' marks only
                continue
            if isinstance(meta, dict):
                waiting.update((meta.get("namespace"), meta.get("name"), step) for step in steps)

        def marks(pod: Pod) -> str | None:
            meta = pod.get("metadata") or {}
            namespace = meta.get("namespace")
            workflow = (meta.get("labels") or {}).get(WORKFLOW_LABEL)
            step = step_of(pod)
            if (namespace, workflow, step) not in waiting:
                return None
            return f"workflow {namespace}/{workflow}/{step}"

        return marks


def step_of(pod: Pod) -> str:
    """The step a pod of a Workflow runs: its node name's last part, without a fan-out index
    (``wf.train(0)`` -> ``train``)."""
    meta = pod.get("metadata") or {}
    node = str((meta.get("annotations") or {}).get(NODE_NAME_ANNOTATION, ""))
    return node.split("(", 1)[0].rsplit(".", 1)[-1]


def step_item(
    step: Obj,
    workflow: Obj,
    *,
    earliest: int,
    latest: int,
    source: str,
    key: str,
    context: NoticeContext,
) -> list[AnnouncedItem]:
    """The item of one step (a DAG task or a steps entry) of ``workflow`` (a Workflow's spec):
    none when its template makes no pod, asks for no GPU or fits no pool."""
    templates = {t["name"]: t for t in workflow.get("templates") or []}
    template = _pod_template(templates.get(step.get("template", "")), workflow)
    if template is None:
        return []
    placed = context.placed(template)
    if placed is None:
        return []
    pool, per_pod = placed
    return [
        AnnouncedItem(
            pool=pool,
            gpus_per_pod=per_pod,
            pods=_fan_out(step),
            gang=False,
            earliest_start=earliest,
            latest_start=latest,
            source=source,
            key=key,
        )
    ]


def _waiting(nodes: list[Obj], templates: dict[str, Obj]) -> Iterable[tuple[Obj, list[Obj]]]:
    """(a step not started yet, the nodes it waits on) - the next hop of each running DAG and
    steps template."""
    for node in nodes:
        template = templates.get(node.get("templateName", ""))
        if node.get("phase") != "Running" or template is None:
            continue
        started = {
            n.get("displayName"): n
            for n in nodes
            if n.get("boundaryID") == node.get("id") and n.get("type") != "StepGroup"
        }
        if node.get("type") == "DAG" and "dag" in template:
            for task in template["dag"].get("tasks") or []:
                needs = _dependencies(task)
                if task["name"] not in started and needs and all(d in started for d in needs):
                    yield task, [started[d] for d in needs]
        elif node.get("type") == "Steps" and "steps" in template:
            groups = template["steps"]
            for before, group in itertools.pairwise(groups):
                if any(s["name"] in started for s in group):
                    continue
                if all(s["name"] in started for s in before):
                    for step in group:
                        yield step, [started[s["name"]] for s in before]


def _dependent_steps(templates: list[Any]) -> set[str]:
    """Names of the DAG tasks with dependencies and of the steps after a template's first group."""
    names = set()
    for template in templates:
        if not isinstance(template, dict):
            continue
        for task in (template.get("dag") or {}).get("tasks") or []:
            if isinstance(task, dict) and _dependencies(task):
                names.add(str(task.get("name")))
        for group in (template.get("steps") or [])[1:]:
            names.update(str(s.get("name")) for s in group or [] if isinstance(s, dict))
    return names


def _dependencies(task: Obj) -> list[str]:
    if task.get("dependencies"):
        return [str(d) for d in task["dependencies"]]
    return _TASK_NAME.findall(str(task.get("depends") or ""))


def _eta(upstream: list[Obj], now: int) -> int | None:
    """When the waiting step's pod should be created: the latest end among its upstream, a
    fixed time (so an upstream that overruns its estimate lets the item expire, not hold
    prewarm while it runs). None when one failed or one runs with no estimate (unknown)."""
    ends = []
    for node in upstream:
        phase = node.get("phase")
        if phase in FAILED:
            return None
        if phase in DONE:
            finished = node.get("finishedAt")
            ends.append(int(timestamp_seconds(finished)) if finished else now)
        elif node.get("startedAt") and node.get("estimatedDuration") is not None:
            ends.append(int(timestamp_seconds(node["startedAt"])) + int(node["estimatedDuration"]))
        else:
            return None
    return max(ends, default=now)


def _pod_template(template: Obj | None, spec: Obj) -> PodTemplateSpec | None:
    """The pod a container or script template makes (None: a DAG, steps or resource template)."""
    if template is None:
        return None
    container = template.get("container") or template.get("script")
    if container is None:
        return None
    pod: dict[str, Any] = {"containers": [{"name": "main", **container}]}
    for field in ("nodeSelector", "tolerations", "affinity"):
        value = template.get(field) or spec.get(field)
        if value:
            pod[field] = value
    labels = (template.get("metadata") or {}).get("labels") or {}
    return cast(PodTemplateSpec, {"metadata": {"labels": labels}, "spec": pod})


def _fan_out(step: Obj) -> int:
    if isinstance(step.get("withItems"), list):
        return max(1, len(step["withItems"]))
    count = (step.get("withSequence") or {}).get("count")
    return max(1, int(count)) if count is not None else 1
