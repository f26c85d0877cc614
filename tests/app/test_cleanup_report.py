"""What an operator is told is still held after stopping a live run, and the buffer drain wait.

``still_held`` is the last thing ``forecaster run --cluster`` prints when stopped: per pool, the
placeholder Jobs, their GPUs and when the last one ends without the daemon (its creation plus
its deadline, to the second), and each of our CapacityBuffers that still asks for replicas with
its expiry. An object without the annotation or field is read as zero, not skipped or
misdated; a buffer at 0 replicas holds nothing and is not listed. ``_remove_buffers`` deletes
drained buffers, waits between checks (never after the last), reports one that fails on its
own line and leaves the rest going.
"""

from __future__ import annotations

from typing import Any

from forecaster.actuators import labels as lbl
from forecaster.actuators.nodepools import NodePools
from forecaster.actuators.prewarm.buffer_backend import (
    BUFFER_DRAIN_CHECKS,
    BUFFER_DRAIN_SECONDS,
)
from forecaster.actuators.prewarm.buffer_backend import remove_drained as _remove_buffers
from forecaster.app.cleanup import Undone, _restore_nodepools, still_held
from forecaster.core.series import iso_utc
from forecaster.errors import ForecasterError
from tests.actuators.test_nodepool_records import NAME, nodepool
from tests.actuators.test_nodepool_records import FakeKube as OneNodePool

NS = "forecaster-placeholders"  # the placeholders' namespace
HOME = "forecaster"  # ours: state, Lease, kill switch, Events
T = 1_800_000_000


def job(
    name: str, pool: str | None, *, gpus: int | None, created: int | None, deadline: int | None
) -> dict[str, Any]:
    notes = {}
    if gpus is not None:
        notes[lbl.GPUS] = str(gpus)
    if created is not None:
        notes[lbl.CREATED_AT] = str(created)
    labels = {lbl.POOL: pool} if pool else {}
    spec = {"activeDeadlineSeconds": deadline} if deadline is not None else {}
    return {"metadata": {"name": name, "annotations": notes, "labels": labels}, "spec": spec}


def buffer(
    name: str, pool: str | None, *, replicas: int | None, expires: int | None
) -> dict[str, Any]:
    notes = {lbl.EXPIRES_AT: str(expires)} if expires is not None else {}
    labels = {lbl.POOL: pool} if pool else {}
    spec = {"replicas": replicas} if replicas is not None else {}
    return {"metadata": {"name": name, "annotations": notes, "labels": labels}, "spec": spec}


class FakeKube:
    """The reads ``still_held`` makes."""

    def __init__(self, jobs: list[dict[str, Any]], buffers: list[dict[str, Any]] | None) -> None:
        self.jobs, self.buffers = jobs, buffers
        self.selectors: list[object] = []

    def list_jobs(self, *, namespace: str, labels: object = None) -> list[dict[str, Any]]:
        assert namespace == NS
        return list(self.jobs)

    def serves_capacity_buffers(self, namespace: str) -> bool:
        return self.buffers is not None

    def list_capacity_buffers(self, namespace: str, labels: object = None) -> list[dict[str, Any]]:
        assert self.buffers is not None, "listed buffers on a cluster that does not serve them"
        self.selectors.append(labels)
        return list(self.buffers)


def test_placeholders_are_summed_per_pool_and_end_at_creation_plus_deadline() -> None:
    kube = FakeKube(
        [
            job("a", "itp", gpus=8, created=T, deadline=3600),
            job("b", "itp", gpus=4, created=T + 60, deadline=7200),
            job("c", "earth", gpus=2, created=T, deadline=600),
        ],
        None,
    )
    assert still_held(kube, placeholders=NS) == [  # type: ignore[arg-type]
        f"pool earth: 1 placeholder Job(s), 2 GPUs, the last ending by {iso_utc(T + 600)}"
        " without the daemon",
        f"pool itp: 2 placeholder Job(s), 12 GPUs, the last ending by {iso_utc(T + 7260)}"
        " without the daemon",
        "`forecaster cleanup` withdraws them now",
    ]


def test_a_placeholder_missing_its_annotations_or_deadline_reads_as_zero() -> None:
    kube = FakeKube([job("a", None, gpus=None, created=None, deadline=None)], None)
    assert still_held(kube, placeholders=NS)[0] == (  # type: ignore[arg-type]
        f"pool ?: 1 placeholder Job(s), 0 GPUs, the last ending by {iso_utc(0)} without the daemon"
    )
    kube = FakeKube([job("a", "itp", gpus=3, created=None, deadline=900)], None)
    assert f"3 GPUs, the last ending by {iso_utc(900)}" in still_held(kube, placeholders=NS)[0]  # type: ignore[arg-type]


def test_buffers_that_ask_for_replicas_are_listed_with_their_expiry() -> None:
    kube = FakeKube(
        [],
        [
            buffer("forecaster-itp", "itp", replicas=3, expires=T + 1800),
            buffer("forecaster-earth", "earth", replicas=0, expires=T),  # drained: holds nothing
            buffer("forecaster-old", "old", replicas=None, expires=T),  # no replicas: none
            buffer("forecaster-x", None, replicas=1, expires=None),  # unreadable: say so
        ],
    )
    assert still_held(kube, placeholders=NS) == [  # type: ignore[arg-type]
        f"pool itp: CapacityBuffer forecaster-itp holds 3 chunk(s) until {iso_utc(T + 1800)}"
        " (then the expiry CronJob zeroes it)",
        f"pool ?: CapacityBuffer forecaster-x holds 1 chunk(s) until {iso_utc(0)}"
        " (then the expiry CronJob zeroes it)",
        "`forecaster cleanup` withdraws them now",
    ]
    assert kube.selectors == [lbl.owned_selector()]


def test_nothing_held_says_nothing() -> None:
    assert still_held(FakeKube([], None), placeholders=NS) == []  # type: ignore[arg-type]
    drained = [buffer("forecaster-itp", "itp", replicas=0, expires=T)]
    assert still_held(FakeKube([], drained), placeholders=NS) == []  # type: ignore[arg-type]


def test_placeholders_and_buffers_are_both_listed() -> None:
    kube = FakeKube(
        [job("a", "itp", gpus=8, created=T, deadline=60)],
        [buffer("forecaster-itp", "itp", replicas=2, expires=T + 60)],
    )
    said = still_held(kube, placeholders=NS)  # type: ignore[arg-type]
    assert [line.split(":")[0] for line in said] == [
        "pool itp",
        "pool itp",
        "`forecaster cleanup` withdraws them now",
    ]


class NodePoolKube(OneNodePool):
    """One NodePool, listed when it carries our record."""

    def list_nodepool_names(self, annotated: str) -> list[str]:
        notes = (self.nodepool or {}).get("metadata", {}).get("annotations") or {}
        return [NAME] if annotated in notes else []


class DrainingBuffers:
    """``remove`` answers per pool from a script: True deleted, False still draining, None
    nothing of ours, or an error."""

    def __init__(self, answers: dict[str, list[bool | Exception | None]]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    def remove(self, pool: str) -> bool | None:
        self.calls.append(pool)
        answer = self.answers[pool].pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_drained_buffers_are_deleted_and_the_wait_stops_when_none_are_left() -> None:
    buffers = DrainingBuffers({"a": [False, True], "b": [True], "c": [None]})
    slept: list[float] = []
    undone = Undone()
    _remove_buffers(buffers, ["a", "b", "c"], sleep=slept.append, undone=undone)  # type: ignore[arg-type]
    assert buffers.calls == ["a", "b", "c", "a"]
    assert slept == [BUFFER_DRAIN_SECONDS]
    assert undone.changed == [
        "CapacityBuffer of b deleted (after 0 replicas)",
        "CapacityBuffer of a deleted (after 0 replicas)",
    ]
    assert undone.failed == []


def test_a_buffer_that_never_drains_is_reported_after_the_last_check_without_a_last_sleep() -> None:
    buffers = DrainingBuffers(
        {"a": [False] * BUFFER_DRAIN_CHECKS, "b": [ForecasterError("409 conflict")]}
    )
    slept: list[float] = []
    undone = Undone()
    _remove_buffers(buffers, ["b", "a"], sleep=slept.append, undone=undone)  # type: ignore[arg-type]
    assert buffers.calls == ["b"] + ["a"] * BUFFER_DRAIN_CHECKS
    assert slept == [BUFFER_DRAIN_SECONDS] * (BUFFER_DRAIN_CHECKS - 1)
    assert undone.failed == ["CapacityBuffer of b: 409 conflict"]
    assert undone.changed == [
        "CapacityBuffer of a left at 0 replicas: the autoscaler still reports replicas;"
        " run cleanup again to delete it"
    ]


def test_one_object_that_fails_is_reported_and_the_rest_go_on() -> None:
    undone = Undone()

    def malformed() -> str:
        raise KeyError("spec")

    def refused() -> str:
        raise ForecasterError("403 forbidden")

    undone.attempt("placeholder Job forecaster/a", malformed)
    undone.attempt("NodePool gpu", refused)
    undone.attempt("NodePool cpu", lambda: None)  # nothing to undo: no line
    undone.attempt("NodePool big", lambda: "NodePool big: restored")
    assert undone.failed == [
        "placeholder Job forecaster/a: KeyError: 'spec'",
        "NodePool gpu: 403 forbidden",
    ]
    assert undone.changed == ["NodePool big: restored"]


def test_a_restored_nodepool_says_which_fields_it_left_to_whoever_changed_them() -> None:
    kube = NodePoolKube(nodepool({"consolidateAfter": "1m", "budgets": [{"nodes": "2"}]}))
    assert NodePools(kube).protect(NAME, consolidate_after="30m", now=T, seconds=3600)  # type: ignore[arg-type]
    assert kube.nodepool is not None
    kube.nodepool["spec"]["disruption"]["budgets"] = [{"nodes": "1"}]
    undone = Undone()
    _restore_nodepools(kube, undone, expired_before=None)  # type: ignore[arg-type]
    assert undone.changed == [
        f"NodePool {NAME}: restored to its recorded original (NodePool {NAME}: budgets changed"
        " by someone else while protected; left as they set it)"
    ]
    clean = NodePoolKube(nodepool({"consolidateAfter": "1m"}))
    assert NodePools(clean).protect(NAME, consolidate_after="30m", now=T, seconds=3600)  # type: ignore[arg-type]
    undone = Undone()
    _restore_nodepools(clean, undone, expired_before=T + 3601)  # type: ignore[arg-type]
    assert undone.changed == [f"NodePool {NAME}: protection expired, restored"]
