"""Argo Workflows as notice (the ``argo`` and ``cronworkflow`` sources), through the API double
serving Argo's Workflow and CronWorkflow CRDs (every object validated against the vendored
schemas).

A running workflow's GPU step whose dependencies have all started is announced on the pool its
pod fits, due when Argo expects its upstream to end (``startedAt`` + ``estimatedDuration``);
only the next hop; first steps, steps after a failed one, templates without GPUs and
workflows not running announce nothing; steps templates and fan-out count; the pods of waiting
steps are marked, the first steps' are not; a step that never comes is withdrawn and charged.
A CronWorkflow's next run announces its first GPU steps; a run its ``when`` skips counts as
not come.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from forecaster.actuators.attribution import shape
from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.notice.argo import ArgoWorkflowSource
from forecaster.actuators.notice.base import NoticeReader, NoticeReading
from forecaster.actuators.notice.cronworkflows import CronWorkflowSource
from forecaster.app import build
from forecaster.core.notice import NoticeLedger
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.testing.fakes import POOL, T0, LiveSource
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import one_pool_settings, placeholders, read_source

GPU = "nvidia.com/gpu"
STARTED = "2027-01-15T07:59:00Z"  # T0 - 60
ESTIMATE = 600  # Argo's estimate of the upstream step: it ends at T0 + 540


def container(gpus: int) -> dict[str, Any]:
    requests = {GPU: str(gpus)} if gpus else {"cpu": "1"}
    return {"image": "train", "resources": {"requests": requests}}


def leaf(name: str, gpus: int) -> dict[str, Any]:
    return {
        "name": name,
        "container": container(gpus),
        "nodeSelector": {"karpenter.sh/nodepool": POOL},
        "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
    }


def node(name: str, kind: str, phase: str, boundary: str = "", **more: Any) -> dict[str, Any]:
    return {
        "id": name,
        "name": name,
        "displayName": name.rsplit(".", 1)[-1],
        "type": kind,
        "phase": phase,
        **({"boundaryID": boundary} if boundary else {}),
        **more,
    }


def pipeline(prep_phase: str = "Running", **changes: Any) -> dict[str, Any]:
    """A DAG: ``prep`` (CPU) -> ``train`` (8 GPUs) -> ``eval`` (1 GPU); ``prep`` running."""
    prep = node(
        "wf.prep",
        "Pod",
        prep_phase,
        "wf",
        templateName="prep",
        startedAt=STARTED,
        estimatedDuration=ESTIMATE,
    )
    obj: dict[str, Any] = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {
            "name": "wf",
            "namespace": "ml",
            "labels": {"workflows.argoproj.io/phase": "Running"},
        },
        "spec": {
            "entrypoint": "main",
            "templates": [
                {
                    "name": "main",
                    "dag": {
                        "tasks": [
                            {"name": "prep", "template": "prep"},
                            {"name": "train", "template": "train", "dependencies": ["prep"]},
                            {"name": "eval", "template": "eval", "depends": "train.Succeeded"},
                        ]
                    },
                },
                leaf("prep", 0),
                leaf("train", 8),
                leaf("eval", 1),
            ],
        },
        "status": {
            "phase": "Running",
            "nodes": {
                "wf": node("wf", "DAG", "Running", templateName="main", startedAt=STARTED),
                "wf.prep": prep,
            },
        },
    }
    obj["spec"].update(changes)
    return obj


@pytest.fixture
def api() -> Iterator[KubeApiDouble]:
    with KubeApiDouble(argo=True) as server:
        server.clock = float(T0)
        ClusterSim(server).busy_pool(POOL, limit_gpus=400)
        yield server
    assert server.invalid == [], server.invalid


def read(api: KubeApiDouble, now: int = T0) -> NoticeReading:
    return read_source(api, ArgoWorkflowSource(), now)


def test_the_next_gpu_step_is_announced_when_its_upstream_should_end(api: KubeApiDouble) -> None:
    api.put("workflows", pipeline())
    (item,) = read(api).items[POOL]
    assert (item.key, item.gpus, item.pods, item.gang) == ("workflow ml/wf/train", 8, 1, False)
    assert (item.earliest_start, item.latest_start) == (T0 + 540, T0 + 540 + 600)


def test_an_upstream_done_makes_the_step_due_now_and_one_failed_announces_nothing(
    api: KubeApiDouble,
) -> None:
    done = pipeline("Succeeded")
    done["status"]["nodes"]["wf.prep"]["finishedAt"] = "2027-01-15T07:59:30Z"
    api.put("workflows", done)
    (item,) = read(api).items[POOL]
    assert item.earliest_start == T0 - 30
    failed = pipeline("Failed")
    failed["metadata"]["name"] = "wf-failed"
    api.put("workflows", failed)
    assert [i.key for i in read(api).items[POOL]] == ["workflow ml/wf/train"]


def test_finished_workflows_are_not_listed(api: KubeApiDouble) -> None:
    done = pipeline()
    done["metadata"]["labels"]["workflows.argoproj.io/phase"] = "Succeeded"
    api.put("workflows", done)
    assert read(api).items == {}
    assert api.requests[-1].query["labelSelector"] == "workflows.argoproj.io/phase=Running"


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"status": {"phase": "Succeeded"}}, "not running"),
        ({"spec": {"suspend": True}}, "suspended"),
        ({"spec": {"shutdown": "Stop"}}, "shut down"),
    ],
)
def test_what_announces_nothing(api: KubeApiDouble, change: dict[str, Any], why: str) -> None:
    obj = pipeline()
    for part, values in change.items():
        obj[part].update(values)
    api.put("workflows", obj)
    assert read(api).items == {}, why


def test_an_upstream_without_an_estimate_announces_nothing_until_it_is_done(
    api: KubeApiDouble,
) -> None:
    obj = pipeline()
    del obj["status"]["nodes"]["wf.prep"]["estimatedDuration"]
    api.put("workflows", obj)
    assert read(api).items == {}


def test_a_steps_template_announces_the_group_after_the_running_one(api: KubeApiDouble) -> None:
    obj = pipeline()
    obj["spec"]["templates"][0] = {
        "name": "main",
        "steps": [
            [{"name": "prep", "template": "prep"}],
            [{"name": "train", "template": "train", "withItems": ["a", "b", "c"]}],
            [{"name": "eval", "template": "eval"}],
        ],
    }
    obj["status"]["nodes"]["wf"]["type"] = "Steps"
    obj["status"]["nodes"]["wf[0]"] = node("wf[0]", "StepGroup", "Running", "wf")
    api.put("workflows", obj)
    (item,) = read(api).items[POOL]
    assert (item.key, item.gpus_per_pod, item.pods) == ("workflow ml/wf/train", 8, 3)


def test_only_the_pods_of_waiting_steps_are_marked(api: KubeApiDouble) -> None:
    api.put("workflows", pipeline())
    marks = read(api).announced

    def pod(step: str) -> Any:
        return {
            "metadata": {
                "namespace": "ml",
                "labels": {"workflows.argoproj.io/workflow": "wf"},
                "annotations": {"workflows.argoproj.io/node-name": f"wf.{step}"},
            },
            "spec": {"containers": []},
        }

    assert marks(pod("train")) and marks(pod("eval(0:a)"))
    assert not marks(pod("prep"))
    # its item: the step's pods run under the key the step was announced as
    assert read(api).announcement(pod("train")) == ("argo", "workflow ml/wf/train")


def test_argo_not_served_is_not_installed() -> None:
    with KubeApiDouble() as bare:
        ClusterSim(bare).add_nodepool(POOL, limit_gpus=400)
        (status,) = read(bare).statuses
    assert not status.installed


def test_a_step_that_never_comes_is_prewarmed_once_then_withdrawn_and_charged(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    obj = pipeline()
    obj["status"]["nodes"]["wf.prep"]["estimatedDuration"] = 120  # train due at T0 + 60
    api.put("workflows", obj)
    config = one_pool_settings(tmp_path)
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    flat = LiveSource(T0 - 2 * 86400, [16.0] * (2 * 1440 + 30))
    daemon = Daemon(reconciler=build.build_reconciler(config, source=flat, kube=kube))
    first = daemon.reconcile(T0)
    assert first is not None and first.plan.pool(POOL).target_gpus >= 8
    assert any("workflow ml/wf/train (8 GPUs" in r for r in first.plan.pool(POOL).reasons)
    api.clock = float(T0 + 120)
    held = placeholders(api)
    assert sum(int(p["spec"]["parallelism"]) for p in held) * 8 >= 8
    assert daemon.reconcile(T0 + 120) is not None  # due, held for; its pod does not come
    assert placeholders(api) == held  # once: nothing new for the same item
    late = T0 + 60 + 601  # past its latest start, no pod: the step did not come
    api.clock = float(late)
    after = daemon.reconcile(late)
    assert after is not None
    assert not any("workflow ml/wf/train" in r for r in after.plan.pool(POOL).reasons)
    status = TestClient(create_app(daemon)).get("/api/v1/status").json()
    (argo,) = [s for s in status["notice_sources"] if s["source"] == "argo"]
    assert (argo["resolved_7d"], argo["precision_7d"]) == (1, 0.0)
    # held from the first tick (T0: due within the configured window) to its latest start
    assert argo["waste_gpu_hours_7d"] == pytest.approx(8 * 660 / 3600, abs=2e-3)


def nightly(**spec: Any) -> dict[str, Any]:
    """A CronWorkflow due at 08:05 (T0 + 300) whose entry DAG starts a CPU and a GPU task, then
    a GPU task that depends on them."""
    workflow = pipeline()["spec"]
    tasks = workflow["templates"][0]["dag"]["tasks"]
    tasks.append({"name": "warmup", "template": "train", "withItems": [1, 2]})
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "CronWorkflow",
        "metadata": {
            "name": "nightly",
            "namespace": "ml",
            "creationTimestamp": "2027-01-14T00:00:00Z",
        },
        "spec": {"schedules": ["5 8 * * *"], "workflowSpec": workflow, **spec},
    }


def read_cron(api: KubeApiDouble, now: int = T0) -> NoticeReading:
    return read_source(api, CronWorkflowSource(), now)


def test_a_cronworkflows_next_run_announces_its_first_gpu_steps(api: KubeApiDouble) -> None:
    api.put("cronworkflows", nightly())
    (item,) = read_cron(api).items[POOL]
    assert item.key == "cronworkflow ml/nightly@2027-01-15T08:05:00Z/warmup"
    assert (item.gpus_per_pod, item.pods, item.earliest_start) == (8, 2, T0 + 300)
    assert item.latest_start == T0 + 300 + 600


@pytest.mark.parametrize(
    "spec", [{"suspend": True}, {"concurrencyPolicy": "Forbid"}, {"concurrencyPolicy": "Replace"}]
)
def test_a_suspended_cronworkflow_or_one_forbidding_a_second_run_announces_nothing(
    api: KubeApiDouble, spec: dict[str, Any]
) -> None:
    obj = nightly(**spec)
    obj["status"] = {"active": [{"name": "nightly-1", "namespace": "ml"}]}
    api.put("cronworkflows", obj)
    assert read_cron(api).items == {}


def test_a_run_its_when_skips_counts_as_not_come(api: KubeApiDouble) -> None:
    """Argo makes no Workflow for a run ``when`` skips: the run stays listed until its latest
    start has passed, then the next one is; the ledger resolves the skipped one as not come."""
    api.put("cronworkflows", nightly(when="false"))
    ledger = NoticeLedger()
    for now in (T0, T0 + 300, T0 + 300 + 601):
        reading = read_cron(api, now)
        ledger.observe(
            POOL, reading.items.get(POOL, ()), readable=None, now=now, window_seconds=900
        )
    (outcome,) = ledger.outcomes
    assert (outcome.source, outcome.came) == ("cronworkflow", False)
    assert outcome.held_gpu_hours == pytest.approx(16 * 900 / 3600)  # due from T0: its window


def cron_run(*, scheduled: str | None = None) -> dict[str, Any]:
    """The Workflow Argo makes for nightly's 08:05 run (stamped with its scheduled time)."""
    run = pipeline()
    run["metadata"] = {
        "name": "nightly-1800000300",
        "namespace": "ml",
        "labels": {
            "workflows.argoproj.io/cron-workflow": "nightly",
            "workflows.argoproj.io/phase": "Running",
        },
    }
    if scheduled is not None:
        run["metadata"]["annotations"] = {"workflows.argoproj.io/scheduled-time": scheduled}
    return run


def test_the_pods_of_a_cron_run_are_marked(api: KubeApiDouble) -> None:
    api.put("cronworkflows", nightly())
    api.put("workflows", cron_run())
    other = pipeline()
    api.put("workflows", other)
    marks = read_cron(api).announced

    def pod(workflow: str) -> Any:
        labels = {"workflows.argoproj.io/workflow": workflow}
        return {"metadata": {"namespace": "ml", "labels": labels}, "spec": {"containers": []}}

    assert marks(pod("nightly-1800000300"))
    assert not marks(pod("wf"))
    # no scheduled time on the run: announced work, linked to no item (notice unmeasured)
    unnamed = ("cronworkflow", "cronworkflow ml/nightly/nightly-1800000300/")
    assert read_cron(api).announcement(pod("nightly-1800000300")) == unnamed


def test_a_cron_runs_step_pods_are_linked_to_the_item_announced_for_them(
    api: KubeApiDouble,
) -> None:
    """Argo stamps each run with its scheduled time: the first step's pods carry the key its
    item was announced under, so their GPU-hours count with the notice it gave."""
    api.put("cronworkflows", nightly())
    (item,) = read_cron(api).items[POOL]
    api.put("workflows", cron_run(scheduled="2027-01-15T08:05:00Z"))
    pod = {
        "metadata": {
            "namespace": "ml",
            "labels": {"workflows.argoproj.io/workflow": "nightly-1800000300"},
            "annotations": {"workflows.argoproj.io/node-name": "nightly-1800000300.warmup"},
        },
        "spec": {"containers": []},
    }
    assert read_cron(api, T0 + 300).announcement(pod) == ("cronworkflow", item.key)  # type: ignore[arg-type]


def test_a_source_not_installed_is_asked_again_only_every_ten_minutes() -> None:
    """A cluster without Argo pays one 404 per source per 10 minutes, not one per tick, and
    Argo installed later is read within those 10 minutes."""
    with KubeApiDouble() as bare:
        ClusterSim(bare).busy_pool(POOL, limit_gpus=400)
        kube = Kube(api_client(host=bare.url), dry_run=True)
        shapes = [shape(n) for n in kube.list_nodepools()]
        reader = NoticeReader([ArgoWorkflowSource()])

        def asked() -> int:
            return sum("/apis/argoproj.io/" in r.path for r in bare.requests)

        (status,) = reader.read(kube, pools=shapes, now=T0).statuses
        assert not status.installed and asked() == 1
        (status,) = reader.read(kube, pools=shapes, now=T0 + 599).statuses
        assert not status.installed and asked() == 1  # not asked again: still not installed
        bare.argo = True
        bare.put("workflows", pipeline())
        reading = reader.read(kube, pools=shapes, now=T0 + 600)
        assert asked() == 2 and reading.statuses[0].installed
        assert [i.key for i in reading.items[POOL]] == ["workflow ml/wf/train"]
