"""Volcano PodGroups as notice, without the API double: what a group asks, what its Queue can
still take of it, and which groups are ahead of it - each other team's object costing itself
only (``tests/actuators/test_notice_volcano.py`` shows the same through the API double)."""

from __future__ import annotations

from typing import Any

from forecaster.actuators.attribution import shape
from forecaster.actuators.notice.base import NoticeContext
from forecaster.actuators.notice.volcano import PODGROUPS, QUEUES, VolcanoSource, _asks, _older
from tests.factories import NOW

GPU = "nvidia.com/gpu"
NODEPOOL = {"metadata": {"name": "a"}, "spec": {"template": {"spec": {"requirements": []}}}}


def group(
    name: str,
    gpus: Any,
    *,
    members: int = 1,
    queue: str = "q",
    phase: str = "Pending",
    at: str = "2027-01-15T08:00:00Z",
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ml", "creationTimestamp": at},
        "spec": {"queue": queue, "minMember": members, "minResources": {GPU: gpus}},
        "status": {"phase": phase},
    }


def queue(capability: int | None = None) -> dict[str, Any]:
    spec = {"capability": {GPU: str(capability)}} if capability is not None else {}
    return {"metadata": {"name": "q"}, "spec": spec, "status": {"allocated": {GPU: "0"}}}


def announce(
    obj: dict[str, Any], *groups: dict[str, Any], capability: int | None = None
) -> list[Any]:
    other = dict(queue(0), metadata={"name": "r"})  # another team's Queue, listed first
    objects = {PODGROUPS: [obj, *groups], QUEUES: [other, queue(capability)]}
    context = NoticeContext([shape(NODEPOOL)], NOW, objects, 600, {"a": GPU})  # type: ignore[arg-type]
    return VolcanoSource().announce(obj, context)


def test_a_group_is_announced_whole_in_whole_pods() -> None:
    (item,) = announce(group("g", "16", members=2))
    assert (item.pods, item.gpus_per_pod, item.gang) == (2, 8, True)
    assert type(item.gpus_per_pod) is int
    (odd,) = announce(group("odd", "3", members=2))  # not an even split: one pod of all of it
    assert (odd.pods, odd.gpus_per_pod) == (1, 3)
    (one,) = announce(group("one", "1"))
    assert one.gpus == 1
    (single,) = announce(group("single", "8"))  # one member: one pod of all of it
    assert (single.pods, single.gpus_per_pod) == (1, 8)
    unset = group("unset", "8")
    del unset["spec"]["minMember"]  # minMember left out: 1
    assert [(i.pods, i.gpus_per_pod) for i in announce(unset)] == [(1, 8)]
    assert announce(group("none", "0")) == []


def test_the_queue_takes_what_its_capability_leaves_after_the_groups_ahead() -> None:
    me = group("me", "8", at="2027-01-15T08:00:00Z")
    older = group("older", "8", at="2027-01-15T07:00:00Z")
    assert [i.gpus for i in announce(me, older, capability=16)] == [8]  # 8 ahead, 8 left
    assert announce(me, older, capability=15) == []  # 7 left: the gang waits whole
    # ahead of no one: another queue's, a running one, a newer one, one larger than the queue,
    # one that cannot be read
    others = (
        group("other-queue", "8", queue="r", at="2027-01-15T07:00:00Z"),
        group("running", "8", phase="Running", at="2027-01-15T07:00:00Z"),
        group("newer", "8", at="2027-01-15T09:00:00Z"),
        group("huge", "64", at="2027-01-15T07:00:00Z"),
        group("unreadable", "lots", at="2027-01-15T07:00:00Z"),
    )
    assert [i.gpus for i in announce(me, *others, capability=8)] == [8]
    exact = group("exact", "8", at="2027-01-15T07:00:00Z")  # exactly the capability: ahead
    assert announce(me, exact, capability=8) == []


def test_what_a_group_asks_of_its_queue() -> None:
    assert _asks(group("g", "8"), GPU, "q", 8) == 8
    assert _asks(group("g", "9"), GPU, "q", 8) == 0  # never enqueued: holds up no one
    assert _asks(group("g", "8", queue="r"), GPU, "q", 8) == 0
    assert _asks(group("g", "8", phase="Inqueue"), GPU, "q", 8) == 0
    assert _asks(group("g", "x"), GPU, "q", 8) == 0


def test_a_group_is_ahead_only_when_created_before_or_named_before_at_the_same_time() -> None:
    early, late = (
        group("b", "8", at="2027-01-15T07:00:00Z"),
        group("a", "8", at="2027-01-15T08:00:00Z"),
    )
    assert _older(early, late) and not _older(late, early)
    twin = group("b", "8", at="2027-01-15T07:00:00Z")
    assert not _older(early, twin) and not _older(twin, early)  # the same place: neither
    assert not _older({"metadata": {}}, late)  # unreadable: ahead of no one
