"""The actuator's per-pool gate and backend switch, on in-memory writers (``Actuator``).

What a cluster rests on: a pool whose command failed gets none of its later commands this tick
(a failed NodePool protection is never followed by prewarm), and the other pools still act; an
unexpected error is reported with its type; a pool with no actuation is refused by name. On the
first tick and on a backend switch the other backend is emptied first, so no prewarm is held
twice; without a switch it is left alone. A buffer carries the pool's server-side limit; new
placeholders pull at most ``max_pulled_images`` of the images the pool ran. A NodePool restore
that left someone's change in place is reported as the pool's error and as an Event.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from forecaster.actuators.actuator import Actuator, PoolActuation
from forecaster.actuators.prewarm.backends import BackendChoice
from forecaster.actuators.prewarm.buffer_backend import CapacityBufferBackend
from forecaster.actuators.prewarm.placeholder_backend import PlaceholderBackend
from forecaster.actuators.prewarm.placeholders import Applied, PlaceholderSpec
from forecaster.core.actions import ProtectNodePool, RestoreNodePool, SetPrewarm
from forecaster.errors import ActuationError

T = 1_800_000_000


class Calls:
    """What the writers were asked, in order, shared by all of them."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []


class FakePlaceholders:
    kube = None
    namespace = "forecaster"

    def __init__(self, calls: Calls, fail: dict[str, Exception] | None = None) -> None:
        self.calls, self.fail = calls, fail or {}

    def apply(self, spec: PlaceholderSpec, *, target: int, now: int) -> Applied:
        self.calls.log.append(("placeholders", spec.pool, target, spec.pull_images))
        if spec.pool in self.fail:
            raise self.fail[spec.pool]
        return Applied(created=(f"{spec.pool}-new",), deleted=(), wasted_gpu_hours=0.5, used_gpus=8)


class FakeNodePools:
    def __init__(self, calls: Calls, *, protect: bool = True, restore: bool = True) -> None:
        self.calls, self._protect, self._restore = calls, protect, restore
        self.conflicts: dict[str, str] = {}
        self.fail: dict[str, Exception] = {}

    def protect(self, name: str, *, consolidate_after: str, now: int, seconds: int) -> bool:
        self.calls.log.append(("protect", name, consolidate_after, seconds))
        if name in self.fail:
            raise self.fail[name]
        return self._protect

    def restore(self, name: str) -> bool:
        self.calls.log.append(("restore", name))
        return self._restore


class FakeBuffers:
    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    def apply(
        self, spec: PlaceholderSpec, *, replicas: int, now: int, limit_gpus: int | None = None
    ) -> bool:
        self.calls.log.append(("buffer", spec.pool, replicas, limit_gpus))
        return True

    def describe(self, pool: str) -> str:
        return f"{pool}: 2 replicas"


class FakeEvents:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def nodepool_conflict(self, name: str, message: str, *, now: int) -> None:
        self.sent.append((name, message))


class Detector:
    def __init__(self, backend: str) -> None:
        self.choice = BackendChoice(backend, "detected")  # type: ignore[arg-type]

    def current(self, now: int) -> BackendChoice:
        return self.choice


def actuator(
    calls: Calls,
    pools: tuple[str, ...] = ("a", "b"),
    *,
    buffers: bool = True,
    detector: Detector | None = None,
    placeholders: FakePlaceholders | None = None,
    nodepools: FakeNodePools | None = None,
) -> Actuator:
    served = {"placeholders": PlaceholderBackend(placeholders or FakePlaceholders(calls))}  # type: ignore[arg-type]
    if buffers:
        served["capacitybuffer"] = CapacityBufferBackend(FakeBuffers(calls))  # type: ignore[assignment,arg-type]
    act = Actuator(
        backends=served,  # type: ignore[arg-type]
        nodepools=nodepools or FakeNodePools(calls),  # type: ignore[arg-type]
        events=FakeEvents(),  # type: ignore[arg-type]
        pools={
            p: PoolActuation(
                PlaceholderSpec(pool=p, gpus=8, max_pulled_images=1),
                limit_gpus=64,
                protect_seconds=1800,
            )
            for p in pools
        },
        detector=detector,  # type: ignore[arg-type]
    )
    return act


def prewarm(pool: str, units: int = 2, images: tuple[str, ...] = ()) -> SetPrewarm:
    return SetPrewarm(pool=pool, units=units, gpus=8 * units, images=images)


def test_a_failed_protection_stops_that_pools_prewarm_and_not_the_others() -> None:
    calls = Calls()
    nodepools = FakeNodePools(calls)
    nodepools.fail["a"] = ActuationError("NodePool a: 403 forbidden")
    act = actuator(calls, nodepools=nodepools)
    report = act.apply(
        [ProtectNodePool("a"), prewarm("a"), ProtectNodePool("b"), prewarm("b")], now=T
    )
    assert report.errors == {"a": "NodePool a: 403 forbidden"}
    assert [c for c in calls.log if c[1] == "a"] == [("protect", "a", "30m", 1800)]
    assert ("placeholders", "b", 2, ()) in calls.log
    assert report.nodepool == {"b": "protected"}
    assert report.created == {"b": ["b-new"]} and report.used_gpus == {"b": 8}
    assert report.wasted_gpu_hours == {"b": 0.5} and report.deleted == {"b": []}


def test_an_unexpected_error_is_reported_with_its_type_and_an_unknown_pool_by_name() -> None:
    calls = Calls()
    act = actuator(calls, placeholders=FakePlaceholders(calls, {"a": KeyError("spec")}))
    report = act.apply([prewarm("a"), prewarm("c"), prewarm("b")], now=T)
    assert report.errors == {"a": "KeyError: 'spec'", "c": "pool c has no actuation configured"}
    assert report.created == {"b": ["b-new"]}


def test_a_protection_already_in_place_is_not_reported_as_written() -> None:
    calls = Calls()
    report = actuator(calls, nodepools=FakeNodePools(calls, protect=False, restore=False)).apply(
        [ProtectNodePool("a"), RestoreNodePool("b")], now=T
    )
    assert report.nodepool == {} and report.errors == {}


def test_a_restore_that_left_someones_change_is_the_pools_error_and_an_event() -> None:
    calls = Calls()
    nodepools = FakeNodePools(calls)
    act = actuator(calls, nodepools=nodepools)
    assert act.apply([RestoreNodePool("a")], now=T).errors == {}
    nodepools.conflicts["b"] = "NodePool b: budgets changed by someone else"
    report = act.apply([RestoreNodePool("b")], now=T)
    assert report.nodepool == {"b": "restored"}
    assert report.errors == {"b": "NodePool b: budgets changed by someone else"}
    assert act.events.sent == [("b", "NodePool b: budgets changed by someone else")]  # type: ignore[attr-defined]
    assert nodepools.conflicts == {}  # reported once


def test_the_first_tick_empties_the_other_backend_and_later_ticks_leave_it() -> None:
    calls = Calls()
    act = actuator(calls, ("a",), detector=Detector("capacitybuffer"))
    report = act.apply([prewarm("a", 3)], now=T)
    assert calls.log == [("placeholders", "a", 0, ()), ("buffer", "a", 3, 64)]
    assert report.backend == {"a": "capacitybuffer (detected)"}
    assert report.buffer_status == {"a": "a: 2 replicas"}
    # what the withdrawal ended is charged: spend never goes uncounted on a switch
    assert report.wasted_gpu_hours == {"a": 0.5} and report.used_gpus == {"a": 8}
    calls.log.clear()
    act.apply([prewarm("a", 1)], now=T + 60)
    assert calls.log == [("buffer", "a", 1, 64)]


def test_a_switch_to_placeholders_zeroes_the_buffer_first_and_pulls_the_pools_images() -> None:
    calls = Calls()
    detector = Detector("capacitybuffer")
    act = actuator(calls, ("a",), detector=detector)
    act.apply([prewarm("a", 3)], now=T)
    calls.log.clear()
    detector.choice = BackendChoice("placeholders", "buffers stopped working")
    report = act.apply([prewarm("a", 2, images=("train:v2", "eval:v1"))], now=T + 60)
    assert calls.log == [("buffer", "a", 0, None), ("placeholders", "a", 2, ("train:v2",))]
    assert report.backend == {"a": "placeholders (buffers stopped working)"}
    calls.log.clear()
    act.apply([prewarm("a", 2)], now=T + 120)
    assert calls.log == [("placeholders", "a", 2, ())]


def test_placeholders_on_a_cluster_without_buffers_write_no_buffer() -> None:
    calls = Calls()
    act = actuator(calls, ("a",), buffers=False)
    report = act.apply([prewarm("a", 2)], now=T)
    assert calls.log == [("placeholders", "a", 2, ())]
    assert report.backend == {"a": "placeholders (configured: actuation placeholders)"}


def test_a_buffer_backend_where_buffers_are_not_served_is_the_pools_error() -> None:
    calls = Calls()
    act = actuator(calls, ("a",), buffers=False)
    act.pools["a"] = dataclasses.replace(act.pools["a"], backend="capacitybuffer")
    report = act.apply([prewarm("a", 2)], now=T)
    assert report.errors == {"a": "pool a: backend capacitybuffer is not served here"}
    assert calls.log == []
    assert report.backend == {
        "a": "capacitybuffer (configured for the pool: backend capacitybuffer)"
    }
