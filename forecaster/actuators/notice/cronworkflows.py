"""Argo CronWorkflows (argoproj.io/v1alpha1): the first GPU steps of each one's next run.

Argo's cron controller creates a run's Workflow at the scheduled time (``spec.schedules`` in
``spec.timezone``, else UTC - assumed, as for CronJobs), and the Workflow's first steps start
then. Per CronWorkflow, the next run after the last one (``status.lastScheduledTime``, else
the object's creation) is announced - one item per first GPU step of its entrypoint: the
entrypoint itself when it is a container or script template, the DAG tasks without
dependencies, or the first steps group (the later steps are the ``argo`` source's once the
run exists). Earliest start: the scheduled time; latest start: + ``startingDeadlineSeconds``,
else + the grace. Nothing for a suspended CronWorkflow, or while a run is active under
``concurrencyPolicy`` ``Forbid`` or ``Replace``. A ``when`` that skips a run leaves it listed
past its latest start: the item did not come, and the source's precision counts it.

Its pods are marked through the run's Workflow (labelled ``workflows.argoproj.io/cron-workflow``
by Argo) and the workflow label Argo puts on every pod of it; the run's scheduled time (Argo's
``workflows.argoproj.io/scheduled-time`` annotation) and the pod's step name its item.
"""

from __future__ import annotations

from typing import Any

from forecaster.actuators.manifests import Pod
from forecaster.actuators.notice.argo import (
    PHASE_LABEL,
    WORKFLOW_LABEL,
    WORKFLOWS,
    step_item,
    step_of,
)
from forecaster.actuators.notice.base import ApiKind, NoticeContext, Obj, PodMarker
from forecaster.actuators.notice.cronjobs import next_due
from forecaster.actuators.quantities import kube_timestamp, timestamp_seconds
from forecaster.core.notice import AnnouncedItem

CRON_LABEL = "workflows.argoproj.io/cron-workflow"
SCHEDULED_TIME = "workflows.argoproj.io/scheduled-time"
CRONWORKFLOWS = ApiKind("argoproj.io", "v1alpha1", "cronworkflows")
CRON_RUNS = ApiKind(
    WORKFLOWS.group,
    WORKFLOWS.version,
    WORKFLOWS.plural,
    labels=f"{CRON_LABEL},{PHASE_LABEL} in (Pending,Running)",
)
"""The Workflows CronWorkflows made that are not finished yet (to mark their pods)."""


class CronWorkflowSource:
    """The ``cronworkflow`` notice source."""

    name: str = "cronworkflow"
    kinds: tuple[ApiKind, ...] = (CRONWORKFLOWS, CRON_RUNS)

    def announce(self, obj: Obj, context: NoticeContext) -> list[AnnouncedItem]:
        spec, status = obj["spec"], obj.get("status") or {}
        if spec.get("suspend"):
            return []
        if status.get("active") and spec.get("concurrencyPolicy", "Allow") in ("Forbid", "Replace"):
            return []
        last = status.get("lastScheduledTime") or obj["metadata"]["creationTimestamp"]
        late = spec.get("startingDeadlineSeconds")
        window = int(late) if late is not None else context.grace_seconds
        earliest, latest = next_due(
            tuple(spec["schedules"]),
            spec.get("timezone") or "UTC",
            timestamp_seconds(last),
            context.now,
            window,
        )
        workflow = spec["workflowSpec"]
        meta = obj["metadata"]
        key = f"cronworkflow {meta['namespace']}/{meta['name']}@{kube_timestamp(earliest)}"
        return [
            item
            for step in _first_steps(workflow)
            for item in step_item(
                step,
                workflow,
                earliest=earliest,
                latest=latest,
                source=self.name,
                key=f"{key}/{step['name']}",
                context=context,
            )
        ]

    def marker(self, context: NoticeContext) -> PodMarker:
        """A pod of a Workflow a CronWorkflow made, in a namespace with that CronWorkflow; its
        item is its run's step (a run without its scheduled time names none)."""
        crons = {
            (meta.get("namespace"), meta.get("name"))
            for meta in (o.get("metadata") or {} for o in context.objects.get(CRONWORKFLOWS, []))
        }
        runs = {
            (meta.get("namespace"), meta.get("name")): _run_key(meta)
            for meta in (o.get("metadata") or {} for o in context.objects.get(CRON_RUNS, []))
            if (meta.get("namespace"), (meta.get("labels") or {}).get(CRON_LABEL)) in crons
        }

        def marks(pod: Pod) -> str | None:
            meta = pod.get("metadata") or {}
            run = runs.get((meta.get("namespace"), (meta.get("labels") or {}).get(WORKFLOW_LABEL)))
            return None if run is None else f"{run}/{step_of(pod)}"

        return marks


def _run_key(meta: Obj) -> str:
    """The item key of a run's steps, less the step: as ``announce`` names them."""
    cron = f"cronworkflow {meta.get('namespace')}/{(meta.get('labels') or {}).get(CRON_LABEL)}"
    try:
        when = timestamp_seconds((meta.get("annotations") or {})[SCHEDULED_TIME])
    except (KeyError, TypeError, ValueError):
        return f"{cron}/{meta.get('name')}"  # not an item's key: counted, notice unmeasured
    return f"{cron}@{kube_timestamp(when)}"


def _first_steps(workflow: Obj) -> list[dict[str, Any]]:
    """The steps a run starts with, each as ``{"name", "template"}`` (plus its fan-out)."""
    templates = {t["name"]: t for t in workflow.get("templates") or []}
    entry = templates.get(workflow.get("entrypoint", ""))
    if entry is None:
        return []
    if "dag" in entry:
        tasks = entry["dag"].get("tasks") or []
        return [t for t in tasks if not t.get("dependencies") and not t.get("depends")]
    if "steps" in entry:
        return list((entry["steps"] or [[]])[0] or [])
    return [{"name": entry["name"], "template": entry["name"]}]
