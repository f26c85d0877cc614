"""Placeholder Jobs through their life, on an in-memory Kubernetes (``Placeholders.apply``).

What money and safety rest on here: a placeholder past its TTL goes even if its Job has not
ended, charged for its whole lifetime; a renewal is charged for the lifetime it did not use,
and no more than ``max_renewals_per_tick`` happen in one tick; a scale-down charges the
GPU-hours exactly (no rounding away) and frees placeholders with no node, then warm nodes
(the oldest first), then nodes still pulling; a pending placeholder is
never renewed; slots above a smaller target are not refilled past it; ``remove_bare_pods``
takes the bare pods of older versions; a Job has ended only on a true Complete/Failed condition;
the PriorityClass must be strictly negative and no lower than ``LOWEST_PRIORITY``; the Job
manifest keeps every field that bounds it (one pod, no retries, a read-only root).
"""

from __future__ import annotations

from typing import Any

import pytest

from forecaster.actuators import labels as lbl
from forecaster.actuators.prewarm.placeholders import (
    LOWEST_PRIORITY,
    Placeholders,
    PlaceholderSpec,
    _ended,
    placeholder_job,
)
from forecaster.errors import ActuationError

NS = "forecaster"
NOW = 1_800_000_000
SPEC = PlaceholderSpec(pool="gpu", gpus=8, ttl_seconds=3600, renew_before_seconds=600)


class FakeKube:
    """The calls ``Placeholders`` makes, on dicts (one pool: selectors are not needed)."""

    def __init__(self, priority: int = -1, policy: str = "Never") -> None:
        self.jobs: dict[str, dict[str, Any]] = {}
        self.running: set[str] = set()
        self.pulling: set[str] = set()  # bound to a node, init containers still pulling
        self.bare: dict[str, dict[str, Any]] = {}  # placeholder pods of versions before Jobs
        self.priority_class = {"value": priority, "preemptionPolicy": policy}

    def list_jobs(self, *, namespace: str, labels: object = None) -> list[dict[str, Any]]:
        return list(self.jobs.values())

    def list_pods(self, *, namespace: str, labels: object = None) -> list[dict[str, Any]]:
        return (
            [
                {
                    "metadata": {"labels": {lbl.JOB_NAME: name}, "ownerReferences": [{}]},
                    "status": {"phase": "Running"},
                }
                for name in self.running
            ]
            + [
                {
                    "metadata": {"labels": {lbl.JOB_NAME: name}, "ownerReferences": [{}]},
                    "spec": {"nodeName": "node-1"},
                    "status": {"phase": "Pending"},
                }
                for name in self.pulling
            ]
            + list(self.bare.values())
        )

    def delete_pod(self, namespace: str, name: str) -> None:
        del self.bare[name]

    def create_job(self, namespace: str, body: dict[str, Any]) -> None:
        self.jobs[body["metadata"]["name"]] = body

    def delete_job(self, namespace: str, name: str) -> None:
        del self.jobs[name]

    def get_priority_class(self, name: str) -> dict[str, Any]:
        return self.priority_class


def placeholders(kube: FakeKube) -> Placeholders:
    return Placeholders(kube, namespace=NS, priority_class="p")  # type: ignore[arg-type]


def created(kube: FakeKube, *, slot: int, at: int, running: bool = True) -> str:
    job = placeholder_job(SPEC, namespace=NS, priority_class="p", slot=slot, now=at)
    job["metadata"]["name"] += f"-{slot}"  # unique even when created at the same second
    kube.create_job(NS, job)
    if running:
        kube.running.add(job["metadata"]["name"])
    return str(job["metadata"]["name"])


def test_a_placeholder_past_its_ttl_goes_even_if_its_job_has_not_ended() -> None:
    kube = FakeKube()
    name = created(kube, slot=0, at=NOW - 4000, running=False)  # pending: never renewed
    applied = placeholders(kube).apply(SPEC, target=0, now=NOW)
    assert applied.deleted == (name,)
    assert applied.wasted_gpu_hours == 8.0  # its whole TTL, not the 4000 s since


def test_renewals_are_charged_their_lifetime_and_capped_per_tick() -> None:
    kube = FakeKube()
    due = [created(kube, slot=slot, at=NOW - 3300 + slot) for slot in range(4)]
    spec = PlaceholderSpec(pool="gpu", gpus=8, max_renewals_per_tick=2)
    applied = placeholders(kube).apply(spec, target=4, now=NOW)
    assert applied.deleted == tuple(due[:2])  # the oldest, two per tick
    assert applied.wasted_gpu_hours == pytest.approx(8 * (3300 + 3299) / 3600)
    assert len(applied.created) == 2  # their slots refilled
    assert applied.used_gpus == 0


def test_a_preempted_placeholder_was_used_not_wasted() -> None:
    kube = FakeKube()
    name = created(kube, slot=0, at=NOW - 600)
    reason = {"type": "Failed", "status": "True", "reason": "PodFailurePolicy"}
    kube.jobs[name]["status"] = {"conditions": [reason]}
    applied = placeholders(kube).apply(SPEC, target=0, now=NOW)
    assert (applied.deleted, applied.used_gpus, applied.wasted_gpu_hours) == ((name,), 8, 0.0)


def test_a_scale_down_charges_the_gpu_hours_exactly() -> None:
    kube = FakeKube()
    created(kube, slot=0, at=NOW - 1000)
    applied = placeholders(kube).apply(SPEC, target=0, now=NOW)
    assert applied.wasted_gpu_hours == pytest.approx(8 * 1000 / 3600)  # 2.22, not 2


def test_a_job_has_ended_only_on_a_true_complete_or_failed_condition() -> None:
    def job(*conditions: dict[str, str]) -> dict[str, Any]:
        return {"status": {"conditions": list(conditions)}}

    preempted = {"type": "Failed", "status": "True", "reason": "PodFailurePolicy"}
    assert _ended(job(preempted)) == "preempted"
    assert _ended(job({"type": "Complete", "status": "True"})) == "ended"
    assert _ended(job({"type": "Failed", "status": "False"})) is None
    assert _ended(job({"type": "FailureTarget", "status": "True"})) is None  # pods still ending
    assert _ended(job()) is None


@pytest.mark.parametrize(
    ("value", "safe"),
    [(-1, True), (LOWEST_PRIORITY, True), (0, False), (LOWEST_PRIORITY - 1, False)],
)
def test_the_priority_class_must_be_negative_and_not_below_the_lowest(
    value: int, safe: bool
) -> None:
    kube = FakeKube(priority=value)
    if safe:
        placeholders(kube).verify_priority_class()
    else:
        with pytest.raises(ActuationError, match="PriorityClass p has value"):
            placeholders(kube).verify_priority_class()


def test_the_job_manifest_keeps_what_bounds_it() -> None:
    job = placeholder_job(SPEC, namespace=NS, priority_class="p", slot=0, now=NOW)
    spec = job["spec"]
    assert (spec["backoffLimit"], spec["completions"], spec["parallelism"]) == (0, 1, 1)
    assert spec["activeDeadlineSeconds"] == 3600
    pod = spec["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["terminationGracePeriodSeconds"] == 0
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65535
    assert pod["enableServiceLinks"] is False
    assert "command" not in pod["containers"][0]  # the image's own (pause)
    with_command = PlaceholderSpec(pool="gpu", gpus=8, command=("sleep", "inf"))
    job = placeholder_job(with_command, namespace=NS, priority_class="p", slot=0, now=NOW)
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["sleep", "inf"]
    (container,) = pod["containers"]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    # nothing to pull: no init container, no scratch volume - the pod starts at once
    assert "initContainers" not in pod and "volumes" not in pod
    pulling = PlaceholderSpec(pool="gpu", gpus=8, pull_images=("ml/train:1",))
    job = placeholder_job(pulling, namespace=NS, priority_class="p", slot=0, now=NOW)
    inits = job["spec"]["template"]["spec"]["initContainers"]
    assert [c["image"] for c in inits] == [pulling.helper_image, "ml/train:1"]


def test_a_pending_placeholder_is_never_renewed() -> None:
    kube = FakeKube()
    name = created(kube, slot=0, at=NOW - 3300, running=False)  # due, were it running
    applied = placeholders(kube).apply(SPEC, target=1, now=NOW)
    assert applied.deleted == () and list(kube.jobs) == [name]


def test_a_scale_down_takes_the_oldest_running_first() -> None:
    kube = FakeKube()
    old, young, middle = (
        created(kube, slot=s, at=NOW - age) for s, age in ((0, 900), (1, 60), (2, 300))
    )
    applied = placeholders(kube).apply(SPEC, target=1, now=NOW)
    assert applied.deleted == (old, middle) and list(kube.jobs) == [young]


def test_a_scale_down_frees_unbound_then_warm_nodes_before_nodes_still_pulling() -> None:
    """A node freed mid-pull takes the next real pod, which then waits for the pull while
    warm nodes stay held (docs/findings.md): warm nodes are freed first."""
    kube = FakeKube()
    pulling_old, pulling_young, unbound, warm = (
        created(kube, slot=s, at=NOW - age, running=False)
        for s, age in enumerate((200, 100, 50, 900))
    )
    kube.pulling |= {pulling_old, pulling_young}
    kube.running.add(warm)
    applied = placeholders(kube).apply(SPEC, target=1, now=NOW)
    assert applied.deleted == (unbound, warm, pulling_young) and list(kube.jobs) == [pulling_old]


def test_slots_left_by_a_smaller_target_are_not_refilled_past_it() -> None:
    kube = FakeKube()
    created(kube, slot=3, at=NOW - 60)  # from when the target was 4
    applied = placeholders(kube).apply(SPEC, target=2, now=NOW)
    assert len(applied.created) == 1 and len(kube.jobs) == 2
    applied = placeholders(kube).apply(SPEC, target=2, now=NOW + 15)
    assert applied.created == () and len(kube.jobs) == 2


def test_bare_placeholder_pods_are_removed_and_named_apart_from_the_jobs() -> None:
    kube = FakeKube()
    job = created(kube, slot=0, at=NOW - 60, running=False)
    labels = {lbl.MANAGED_BY: lbl.MANAGER, lbl.ROLE: lbl.PLACEHOLDER, lbl.POOL: "gpu"}
    kube.bare["old-pod"] = {"metadata": {"name": "old-pod", "labels": labels}, "status": {}}
    assert placeholders(kube).remove_bare_pods("gpu") == ["old-pod"]
    assert kube.bare == {} and list(kube.jobs) == [job]  # a Job's pod has its owner


def test_what_is_not_ours_is_never_deleted() -> None:
    kube = FakeKube()
    name = created(kube, slot=0, at=NOW - 60)
    del kube.jobs[name]["metadata"]["labels"][lbl.MANAGED_BY]  # relabelled by someone else
    with pytest.raises(AssertionError, match="not managed by forecaster"):
        placeholders(kube).delete(kube.jobs[name])
    assert name in kube.jobs
    kube.jobs.clear()
    kube.bare["their-pod"] = {"metadata": {"name": "their-pod", "labels": {}}, "status": {}}
    with pytest.raises(AssertionError, match="not managed by forecaster"):
        placeholders(kube).remove_bare_pods("gpu")
    assert "their-pod" in kube.bare


def test_expiry_and_renewal_start_at_their_second() -> None:
    kube = FakeKube()
    expired = created(kube, slot=0, at=NOW - 3600, running=False)  # exactly its TTL
    due = created(kube, slot=1, at=NOW - 3000)  # exactly TTL - renew_before, running
    applied = placeholders(kube).apply(SPEC, target=2, now=NOW)
    assert set(applied.deleted) == {expired, due}


def test_expiry_charges_exact_gpu_hours_and_nothing_for_a_clock_ahead() -> None:
    kube = FakeKube()
    created(kube, slot=0, at=NOW - 2500, running=False)
    short = PlaceholderSpec(pool="gpu", gpus=8, ttl_seconds=2000)
    assert placeholders(kube).apply(short, target=0, now=NOW).wasted_gpu_hours == pytest.approx(
        8 * 2000 / 3600
    )
    for at in (NOW, NOW + 100):  # created this second, or by a replica whose clock is ahead
        created(kube, slot=0, at=at)
        assert placeholders(kube).apply(SPEC, target=0, now=NOW).wasted_gpu_hours == 0.0


def test_a_job_without_our_gpu_annotation_counts_no_gpus() -> None:
    kube = FakeKube()
    name = created(kube, slot=0, at=NOW - 600)
    del kube.jobs[name]["metadata"]["annotations"][lbl.GPUS]
    reason = {"type": "Failed", "status": "True", "reason": "PodFailurePolicy"}
    kube.jobs[name]["status"] = {"conditions": [reason]}
    assert placeholders(kube).apply(SPEC, target=0, now=NOW).used_gpus == 0
