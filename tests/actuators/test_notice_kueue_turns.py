"""Kueue's pending workloads as notice, function by function (no API double): which running work
is timed and how, and when each pending workload's turn comes (``tests/actuators/
test_notice_kueue.py`` shows the same through the API double and the visibility API)."""

from __future__ import annotations

from typing import Any

from forecaster.actuators.notice.base import NoticeContext
from forecaster.actuators.notice.kueue_pending import (
    MAX_AHEAD_SECONDS,
    _admitted_in_turn,
    _durations_seen,
    _Queue,
    _queues,
    _readable_units,
    _running_ends,
    _seen_end,
)
from forecaster.actuators.notice.kueue_reserved import FLAVORS
from forecaster.core.series import iso_utc
from tests.factories import NOW

GPU = "nvidia.com/gpu"


def workload(
    name: str,
    *,
    cq: str = "q",
    gpus: int = 8,
    admitted: float | None = None,
    finished: float | None = None,
    created: float = NOW - 600,
    **spec: Any,
) -> dict[str, Any]:
    """A Workload of LocalQueue ``lq`` asking one pod of ``gpus`` GPUs; ``admitted`` and
    ``finished``: when those conditions turned true (None: not)."""
    conditions = []
    if admitted is not None:
        conditions.append(
            {"type": "Admitted", "status": "True", "lastTransitionTime": iso_utc(admitted)}
        )
    if finished is not None:
        conditions.append(
            {"type": "Finished", "status": "True", "lastTransitionTime": iso_utc(finished)}
        )
    template = {
        "spec": {"containers": [{"name": "c", "resources": {"requests": {GPU: str(gpus)}}}]}
    }
    return {
        "metadata": {"name": name, "namespace": "ml", "creationTimestamp": iso_utc(created)},
        "spec": {
            "queueName": "lq",
            "podSets": [{"name": "main", "count": 1, "template": template}],
            **spec,
        },
        "status": {"admission": {"clusterQueue": cq}, "conditions": conditions},
    }


def test_only_this_queues_admitted_unfinished_work_is_timed() -> None:
    unadmitted = workload("waiting")
    unadmitted["status"]["conditions"] = [
        {"type": "Admitted", "status": "False", "lastTransitionTime": iso_utc(NOW)}
    ]
    runs = [
        unadmitted,  # first: the search goes on past it
        workload("no-condition"),
        workload("other-queue", cq="other", admitted=NOW - 60, maximumExecutionTimeSeconds=60),
        workload("done", admitted=NOW - 600, finished=NOW - 60, maximumExecutionTimeSeconds=600),
        workload("bounded", admitted=NOW - 60, maximumExecutionTimeSeconds=600),
    ]
    assert _running_ends(runs, "q", GPU, now=NOW) == [(NOW + 540, 8)]


def test_the_runs_seen_are_this_queues_finished_ones_that_ran() -> None:
    runs = [
        workload("other", cq="other", admitted=NOW - 900, finished=NOW - 800),  # first
        workload("unadmitted", finished=NOW - 800),
        workload("instant", admitted=NOW - 800, finished=NOW - 800),  # ran 0 s: not a run
        workload("one-second", admitted=NOW - 801, finished=NOW - 800),
        workload("ten-minutes", admitted=NOW - 1400, finished=NOW - 800),
    ]
    assert _durations_seen(runs, "q") == {("ml", "lq"): [1.0, 600.0]}


def test_a_run_is_timed_by_the_runs_that_lasted_longer_than_it_has_so_far() -> None:
    started = NOW - 100
    # 100 s run so far: the 100 s run is no longer than it - the three others are
    assert _seen_end([100, 200, 300, 400], started, now=NOW) == started + 300
    assert _seen_end([100, 200, 300], started, now=NOW) is None  # two longer: too few


def test_a_workload_that_cannot_be_read_takes_no_ones_turn() -> None:
    bad = workload("bad")
    bad["spec"]["podSets"][0]["count"] = "many"
    assert _readable_units(bad, GPU) == 0
    assert _readable_units(workload("good"), GPU) == 8


def turn(
    pending: list[dict[str, Any]], *, free: int, frees: tuple[tuple[float, int], ...]
) -> list[Any]:
    queue = _Queue("a", GPU, frozenset({"f"}), free, frees, 32)
    entries = [{"metadata": {"name": w["metadata"]["name"], "namespace": "ml"}} for w in pending]
    entries.insert(0, {"metadata": {"name": "gone", "namespace": "ml"}})  # listed, no Workload
    workloads = {("ml", w["metadata"]["name"]): w for w in pending}
    context = NoticeContext([], NOW, {}, 600, {"a": GPU})
    return _admitted_in_turn(queue, entries, workloads, context, source="kueue-pending")


def test_each_pending_workload_waits_for_the_soonest_quota_that_covers_it() -> None:
    frees = ((NOW + 100.0, 8), (NOW + 200.0, 16))
    exact = turn([workload("fits")], free=8, frees=frees)  # exactly the free quota: now
    assert [(i.key, i.earliest_start) for i in exact] == [("pending ml/fits/main", NOW - 600)]
    later = turn([workload("waits")], free=0, frees=frees)  # the soonest 8 free first
    assert [i.earliest_start for i in later] == [NOW + 100]
    both = turn([workload("first"), workload("second", gpus=16)], free=0, frees=frees)
    assert [(i.key.split("/")[1], i.earliest_start) for i in both] == [
        ("first", NOW + 100),
        ("second", NOW + 200),
    ]
    unreadable = workload("bad")
    unreadable["spec"]["podSets"][0]["count"] = "many"
    assert [i.key for i in turn([unreadable, workload("next")], free=8, frees=())] == [
        "pending ml/next/main"
    ]


def test_work_expected_past_the_look_ahead_ends_the_queues_items() -> None:
    edge = workload("edge", created=NOW + MAX_AHEAD_SECONDS)
    assert [i.key for i in turn([edge], free=8, frees=())] == ["pending ml/edge/main"]
    far = workload("far", created=NOW + MAX_AHEAD_SECONDS + 1)
    assert turn([far, workload("after")], free=16, frees=()) == []  # in turn: none past it


def test_a_pod_set_without_a_count_is_one_pod() -> None:
    one = workload("one")
    del one["spec"]["podSets"][0]["count"]
    (item,) = turn([one], free=8, frees=())
    assert (item.pods, item.gpus) == (1, 8)


def test_a_pool_the_queue_holds_no_quota_of_its_resource_on_leaves_the_others_timed() -> None:
    flavors = [
        {"metadata": {"name": f"f{pool}"}, "spec": {"nodeLabels": {"karpenter.sh/nodepool": pool}}}
        for pool in ("a", "b")
    ]
    cq = {
        "metadata": {"name": "q"},
        "spec": {
            "resourceGroups": [
                {
                    "flavors": [
                        {"name": "fa", "resources": [{"name": "amd.com/gpu", "nominalQuota": 8}]},
                        {"name": "fb", "resources": [{"name": GPU, "nominalQuota": 16}]},
                    ]
                }
            ]
        },
    }
    context = NoticeContext([], NOW, {FLAVORS: flavors}, 600, {"a": GPU, "b": GPU})
    (queue,) = _queues(cq, [], context)  # pool a counts nvidia.com/gpu: the queue has none there
    assert (queue.pool, queue.free, queue.nominal) == ("b", 16, 16)
