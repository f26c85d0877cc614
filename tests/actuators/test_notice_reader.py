"""The notice reader's own rules, on a fake lister and a fake clock (no API double, no sleep):
a hanging source's growing backoff and when it is asked again, the tick's notice budget, a
context kind listed only when something announces, what a failing marker or object costs, and
each problem said once. The API double's tests (``tests/faults/test_tenant_objects.py``) show
the same on the wire; these pin each rule's edges (the mutation tool found them unpinned)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from forecaster.actuators.notice import base
from forecaster.actuators.notice.base import (
    HANG_BACKOFF_SECONDS,
    ApiKind,
    NoticeContext,
    NoticeReader,
    NoticeReading,
    read_notice,
)
from forecaster.core.notice import AnnouncedItem
from tests.factories import NOW

MAIN = ApiKind("example.com", "v1", "things")
CONTEXT = ApiKind("example.com", "v1", "helpers")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(base.time, "monotonic", fake)
    return fake


@dataclass
class Lister:
    """Serves ``objects`` by plural; a plural in ``hangs`` takes that long and then fails."""

    clock: Clock
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    hangs: dict[str, float] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)
    deadlines: list[float] = field(default_factory=list)

    def list_objects(
        self, group: str, version: str, plural: str, *, labels: str | None = None
    ) -> list[dict[str, Any]] | None:
        self.asked.append(plural)
        if plural in self.hangs:
            self.clock.now += self.hangs[plural]
            raise TimeoutError("read timed out")
        return self.objects.get(plural)

    @contextmanager
    def within(self, seconds: float) -> Iterator[None]:
        self.deadlines.append(seconds)
        yield


@dataclass
class Source:
    name: str = "things"
    kinds: tuple[ApiKind, ...] = (MAIN, CONTEXT)
    fails_on: str = ""
    marker_fails: bool = False

    def announce(self, obj: dict[str, Any], context: NoticeContext) -> list[AnnouncedItem]:
        name = obj["metadata"]["name"]
        if name == self.fails_on:
            raise ValueError("x" * 400)
        return [AnnouncedItem("a", 8, 1, False, NOW, NOW + 600, self.name, name)]

    def marker(self, context: NoticeContext) -> Any:
        if self.marker_fails:
            raise RuntimeError("no marker")
        return lambda pod: pod["metadata"].get("labels", {}).get("run")


def thing(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ml"}}


def test_a_hanging_source_is_skipped_for_a_growing_backoff_and_asked_again_at_its_end(
    clock: Clock,
) -> None:
    lister = Lister(clock, {"things": [thing("t")]}, hangs={"things": 5.0})
    reader = NoticeReader([Source()], source_deadline_seconds=5.0)
    now, waits = NOW, []
    for _ in range(len(HANG_BACKOFF_SECONDS) + 1):
        reading = reader.read(lister, pools=[], now=now)
        assert "ran out of time" in str(reading.statuses[0].problem)
        asked = len(lister.asked)
        skipped = reader.read(lister, pools=[], now=now + 1)
        assert len(lister.asked) == asked  # backing off: not asked
        (status,) = skipped.statuses
        assert status.installed and "skipped until" in str(status.problem)
        until = int(str(status.problem).rsplit(" ", 1)[-1])
        waits.append(until - now)
        assert reader.read(lister, pools=[], now=until - 1).statuses == skipped.statuses
        assert len(lister.asked) == asked
        now = until  # at its end it is asked again (and hangs again)
    assert waits == [*HANG_BACKOFF_SECONDS, HANG_BACKOFF_SECONDS[-1]]
    lister.hangs.clear()  # one good read resets the backoff
    assert reader.read(lister, pools=[], now=now).statuses[0].problem is None
    lister.hangs["things"] = 5.0
    reader.read(lister, pools=[], now=now + 10)
    problem = reader.read(lister, pools=[], now=now + 11).statuses[0].problem
    assert problem == f"ran out of time before; skipped until {now + 10 + HANG_BACKOFF_SECONDS[0]}"


def test_a_source_failing_fast_is_not_a_hang_and_keeps_being_asked(clock: Clock) -> None:
    lister = Lister(clock, {"things": [thing("t")]}, hangs={"things": 4.25})  # < 0.9 x 5 s
    reader = NoticeReader([Source()], source_deadline_seconds=5.0)
    first = reader.read(lister, pools=[], now=NOW)
    assert "ran out of time" not in str(first.statuses[0].problem)
    reader.read(lister, pools=[], now=NOW + 1)
    assert lister.asked == ["things", "things"]
    at_edge = Lister(clock, {"things": [thing("t")]}, hangs={"things": 4.5})  # 0.9 x 5 s
    assert "ran out of time (4.5 s of 5 s)" in str(
        read_notice(at_edge, [Source()], pools=[], now=NOW, source_deadline_seconds=5.0)
        .statuses[0]
        .problem
    )


def test_the_notice_budget_spent_leaves_the_rest_unread_but_said(clock: Clock) -> None:
    """Each source's deadline is what is left of the budget; under a second left, the rest are
    not read this tick (installed, with why) - every one of them, not only the next."""
    lister = Lister(clock, {"things": [thing("t")], "others": [thing("o")]}, hangs={"slow": 17.5})
    sources = [
        Source("slow", (ApiKind("example.com", "v1", "slow"),)),
        Source("a", (MAIN,)),
        Source("b", (ApiKind("example.com", "v1", "others"),)),
    ]
    reading = read_notice(
        lister, sources, pools=[], now=NOW, source_deadline_seconds=20.0, budget_seconds=20.0
    )
    assert [s.source for s in reading.statuses] == ["slow", "a", "b"]
    assert [s.installed for s in reading.statuses] == [True, True, True]
    spent = "not read this tick: the notice budget (20 s) is spent"
    assert [s.problem for s in reading.statuses[1:]] == [None, None]  # 2.5 s left: read
    assert lister.deadlines == [20.0, 2.5, 2.5]
    clock.now = 1000.0
    lister.hangs["slow"] = 19.0  # 1 s left: the next is still read
    read_notice(lister, sources[:2], pools=[], now=NOW, source_deadline_seconds=20.0)
    assert lister.asked[-1] == "things"
    clock.now = 1000.0
    lister.hangs["slow"] = 19.5  # half a second left: no one is
    late = read_notice(lister, sources, pools=[], now=NOW, source_deadline_seconds=20.0)
    assert [s.problem for s in late.statuses[1:]] == [spent, spent]
    assert all(s.installed for s in late.statuses)


def test_a_context_kind_is_listed_only_when_something_announces(clock: Clock) -> None:
    lister = Lister(clock, {"things": [], "helpers": []})
    read_notice(lister, [Source()], pools=[], now=NOW)
    assert lister.asked == ["things"]
    lister.objects["things"] = [thing("t")]
    read_notice(lister, [Source()], pools=[], now=NOW)
    assert lister.asked == ["things", "things", "helpers"]


def test_a_failing_object_or_marker_costs_itself_only(clock: Clock) -> None:
    lister = Lister(clock, {"things": [thing("bad"), thing("good")], "helpers": []})
    reading = read_notice(lister, [Source(fails_on="bad")], pools=[], now=NOW)
    assert [i.key for i in reading.items["a"]] == ["good"]
    (passed,) = reading.skipped
    assert (passed.name, passed.reason, passed.message) == ("ml/bad", "unreadable", "x" * 300)
    (status,) = reading.statuses
    assert status.marks_pods and status.problem is None  # a source marks its pods by default
    pod = {"metadata": {"name": "p", "namespace": "ml", "labels": {"run": "good"}}}
    assert reading.announcement(pod) == ("things", "good")  # type: ignore[arg-type]
    blind = read_notice(lister, [Source(marker_fails=True)], pools=[], now=NOW)
    assert "cannot mark its pods: RuntimeError" in str(blind.statuses[0].problem)
    assert blind.announcement(pod) is None  # type: ignore[arg-type]


def test_one_pod_a_marker_cannot_read_leaves_the_next_markers_to_judge_it() -> None:
    def broken(pod: Any) -> str | None:
        raise KeyError("labels")

    reading = NoticeReading(markers=(("first", broken), ("second", lambda pod: "run-1")))
    pod = {"metadata": {"name": "p", "namespace": "ml"}}
    assert reading.announcement(pod) == ("second", "run-1")  # type: ignore[arg-type]


def test_each_problem_is_said_once_when_it_appears_and_when_it_ends(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    lister = Lister(clock, {"things": [thing("t")], "helpers": []})
    reader = NoticeReader([Source(marker_fails=True)])
    with caplog.at_level(logging.INFO, logger=base.log.name):
        for now in (NOW, NOW + 15, NOW + 30):
            reader.read(lister, pools=[], now=now)
        reader.sources = (Source(),)
        for now in (NOW + 45, NOW + 60):
            reader.read(lister, pools=[], now=now)
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "notice source things: cannot mark its pods: RuntimeError: no marker",
        "notice source things: read again",
    ]


def test_a_template_asking_none_of_its_pools_accelerator_is_placed_nowhere() -> None:
    """An AMD pod template on a pool that counts NVIDIA GPUs announces no item there (not one of
    0 GPUs); an item of no namespace is read whatever namespaces are chosen."""
    context = NoticeContext([], NOW, {}, 600, {"a": "nvidia.com/gpu", "b": "amd.com/gpu"})
    amd = {"spec": {"containers": [{"resources": {"requests": {"amd.com/gpu": "1"}}}]}}
    assert context.placed(amd, "a") is None  # type: ignore[arg-type]
    assert context.placed(amd, "b") == ("b", 1)  # type: ignore[arg-type]
    assert base.EVERY_NAMESPACE.allows("")
    assert base.NamespaceFilter(include=frozenset({"ml"})).allows("")
