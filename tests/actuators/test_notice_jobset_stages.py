"""The JobSet source's reading of one JobSet, without the API double: defaults of fields a tenant
leaves out, which stages wait, when a stage's upstream counts as done (``tests/actuators/
test_notice_jobsets.py`` shows the same through the API double, with the Jobs it made)."""

from __future__ import annotations

from typing import Any

from forecaster.actuators.attribution import shape
from forecaster.actuators.notice.base import NoticeContext
from forecaster.actuators.notice.jobsets import (
    JOBS,
    JOBSET_LABEL,
    REPLICATED_JOB_LABEL,
    JobSetSource,
    _finished,
    _started,
)
from forecaster.core.series import iso_utc
from tests.factories import NOW, jobset

GPU = "nvidia.com/gpu"
NODEPOOL = {
    "metadata": {"name": "a"},
    "spec": {
        "template": {
            "spec": {
                "requirements": [],
                "taints": [{"key": GPU, "value": "true", "effect": "NoSchedule"}],
            }
        }
    },
}


def announce(obj: dict[str, Any], jobs: list[dict[str, Any]] | None = None) -> list[Any]:
    objects = {JOBS: jobs or []}
    context = NoticeContext([shape(NODEPOOL)], NOW, objects, 600, {"a": GPU})  # type: ignore[arg-type]
    return JobSetSource().announce(obj, context)


def job(
    jobset_name: str, *, namespace: str = "ml", started: float, ran: float | None = None
) -> dict[str, Any]:
    """A Job of the ``dataset-initializer`` stage: started, and done after ``ran`` seconds."""
    status = {"startTime": iso_utc(started)}
    if ran is not None:
        status["completionTime"] = iso_utc(started + ran)
    labels = {JOBSET_LABEL: jobset_name, REPLICATED_JOB_LABEL: "dataset-initializer"}
    return {
        "metadata": {"name": f"{jobset_name}-init", "namespace": namespace, "labels": labels},
        "status": status,
    }


def stage(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["replicatedJobs"][1]


def test_a_stage_waiting_on_a_finished_upstream_is_due_now_with_its_pods() -> None:
    done = jobset(pool="a", upstream={"succeeded": 1})
    (item,) = announce(done)
    assert (item.pods, item.gpus, item.gang, item.earliest_start) == (2, 16, True, NOW)


def test_fields_left_out_take_kubernetes_defaults() -> None:
    """No ``replicas`` (1), no ``parallelism`` (1), no ``completions``; an upstream with no
    ``replicas`` is one job, done once one succeeded."""
    obj = jobset(pool="a", upstream={"succeeded": 1})
    del obj["spec"]["replicatedJobs"][0]["replicas"]
    job = stage(obj)
    del job["replicas"]
    del job["template"]["spec"]["parallelism"]
    del job["template"]["spec"]["completions"]
    (item,) = announce(obj)
    assert (item.pods, item.earliest_start) == (1, NOW)
    job["template"]["spec"]["parallelism"] = 3  # 3 pods a job, 1 job
    assert announce(obj)[0].pods == 3
    job["dependsOn"] = [{"name": "no-such-stage", "status": "Complete"}]
    assert announce(obj) == []  # waits on nothing that exists: untimed, not due now


def test_a_stage_waits_on_its_first_dependency_and_the_ones_after_a_passed_one_are_read() -> None:
    obj = jobset(pool="a", upstream={"succeeded": 1})
    job = stage(obj)
    job["dependsOn"].append({"name": "never-started", "status": "Complete"})
    assert [i.earliest_start for i in announce(obj)] == [NOW]  # by the first: done
    # a first stage (no dependsOn) listed before the waiting one is passed over, not the end
    obj["spec"]["replicatedJobs"].insert(0, dict(stage(obj), name="first", dependsOn=[]))
    assert [i.key.split("/")[2].split(" ")[0] for i in announce(obj)] == ["node"]
    # an untimed stage (its upstream not started) leaves the next one read
    later = dict(
        stage(obj), name="later", dependsOn=[{"name": "dataset-initializer", "status": "Complete"}]
    )
    obj["spec"]["replicatedJobs"].insert(
        1, dict(later, name="blocked", dependsOn=[{"name": "idle", "status": "Complete"}])
    )
    assert sorted(i.key.split("/")[2].split(" ")[0] for i in announce(obj)) == ["node"]


def test_a_ready_upstream_counts_only_when_all_its_jobs_are() -> None:
    ready = jobset(pool="a", depends="Ready", upstream={"ready": 1})
    assert [i.earliest_start for i in announce(ready)] == [NOW]
    obj = jobset(pool="a", depends="Ready", upstream={"ready": 1})
    obj["spec"]["replicatedJobs"][0]["replicas"] = 2  # one of two ready: not yet, but started
    assert [i.earliest_start for i in announce(obj)] == [NOW]  # Ready: due as soon as started
    none = jobset(pool="a", depends="Complete", upstream={"active": 0})
    assert announce(none) == []  # not started: untimed
    idle = jobset(pool="a", depends="Ready", upstream={"active": 0})
    assert announce(idle) == []  # nor when it waits on Ready


def test_finished_and_started_read_their_own_fields() -> None:
    assert _finished({"conditions": [{"type": "Completed", "status": "True"}]})
    assert not _finished({"conditions": [{"type": "Completed", "status": "False"}]})
    assert not _finished({"conditions": [{"type": "StartupPolicyCompleted", "status": "True"}]})
    assert not _started({"name": "x"})  # counts left out are zeros
    assert _started({"name": "x", "ready": 1})
    assert not _started(None)


def test_a_running_upstream_is_timed_by_the_runs_of_its_stage_in_its_namespace() -> None:
    """Its stage's Jobs of this JobSet started 5 min ago; earlier runs of the stage (other
    JobSets of the namespace) took 10 to 20 min: due in 5 to 15 min. A run of that stage name in
    another namespace is another team's and times nothing."""
    obj = jobset(pool="a", upstream={"active": 1})
    jobs = [
        job("train-1", started=NOW - 300),
        job("train-0", started=NOW - 7200, ran=600),
        job("train-x", started=NOW - 9000, ran=1200),
        job("theirs", namespace="other", started=NOW - 90000, ran=86400),
    ]
    (item,) = announce(obj, jobs)
    assert (item.earliest_start, item.latest_start) == (NOW + 300, NOW + 900 + 600)
    done = jobset(pool="a", upstream={"succeeded": 1})  # all of it done: due now, whatever ran
    assert [i.earliest_start for i in announce(done, jobs)] == [NOW]


def test_an_upstream_of_no_replicas_is_done_whatever_its_status_leaves_out() -> None:
    obj = jobset(pool="a", upstream={"active": 0})
    obj["spec"]["replicatedJobs"][0]["replicas"] = 0
    del obj["status"]["replicatedJobsStatus"][0]["succeeded"]
    assert [i.earliest_start for i in announce(obj)] == [NOW]
