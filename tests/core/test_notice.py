"""Announced items in the plan and the trust rule per notice source (pure)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.performance.trust_check import scan
from forecaster.core import notice as notice_module
from forecaster.core.notice import (
    DISTRUST_AFTER_SECONDS,
    TRUST_WINDOW_SECONDS,
    AnnouncedItem,
    InFlight,
    NoticeLedger,
    Outcome,
    SourceStatus,
    distrusted_keys,
    over_gpu_share,
    over_share,
    top_namespaces,
)
from forecaster.core.planner import Mode, PoolInput, announced_gpus, plan, planned_demand
from forecaster.core.policy import Budgets
from forecaster.reconcile.state import ServiceState, StateFormatError
from tests.factories import NOW, forecast, policy, snapshot

WINDOW = 900


def item(key: str = "a", *, start: int = NOW + 300, gpus: int = 16, source: str = "cronjob"):  # type: ignore[no-untyped-def]
    return AnnouncedItem("a", 8, gpus // 8, False, start, start + 600, source, key)


def test_only_items_due_within_the_window_raise_the_plans_demand() -> None:
    snap = snapshot(running_gpus=16, announced=(item("soon"), item("later", start=NOW + 3600)))
    assert planned_demand(snap, forecast(10.0), window_seconds=WINDOW) == 32.0  # 16 + soon
    assert planned_demand(snap, forecast(10.0), window_seconds=0) == 10.0  # none due yet


def test_announced_work_is_added_to_the_forecast_of_the_rest_once() -> None:
    """The forecast is of unannounced work (its histories leave announced pods out): items due
    and announced pods running add to it; unannounced pods running only floor it."""
    soon = (item("soon"),)
    snap = snapshot(running_gpus=16, announced=soon)
    assert planned_demand(snap, forecast(40.0), window_seconds=WINDOW) == 56.0  # 40 + 16 due
    # 8 of the 16 running GPUs are an announced run: on top, not inside the forecast
    snap = snapshot(running_gpus=16, announced=soon, announced_real_gpus=8)
    assert planned_demand(snap, forecast(40.0), window_seconds=WINDOW) == 64.0  # 8 + 16 + 40
    assert planned_demand(snap, forecast(2.0), window_seconds=WINDOW) == 32.0  # 8 + 16 + 8 now
    # once the item's pods exist it leaves the reading: its GPUs counted once, as running
    came = snapshot(running_gpus=32, announced_real_gpus=24)
    assert planned_demand(came, forecast(2.0), window_seconds=WINDOW) == 32.0


def test_work_whose_pods_stay_in_the_histories_floors_the_forecast_not_adds_to_it() -> None:
    """A Kueue workload holding quota (``in_history``: its pods are not marked, the forecast
    learnt its kind) raises the forecast's part to what runs now plus it - the larger of the
    two - and is not announced work for the error budget; a distrusted source's is left out."""
    held = (dataclasses.replace(item("wl", start=NOW, source="kueue"), in_history=True),)
    snap = snapshot(running_gpus=16, announced=held)
    assert planned_demand(snap, forecast(40.0), window_seconds=WINDOW) == 40.0  # 40 > 16 + 16
    assert planned_demand(snap, forecast(20.0), window_seconds=WINDOW) == 32.0  # 16 + 16 > 20
    assert announced_gpus(snap, window_seconds=WINDOW) == 0
    distrusted = {"kueue": "precision 0.00 over 4 items in 7 days < 0.5 for a day"}
    left = planned_demand(snap, forecast(20.0), window_seconds=WINDOW, distrusted=distrusted)
    assert left == 20.0


def test_a_distrusted_sources_items_are_left_out_and_said() -> None:
    snap = snapshot(running_gpus=16, allocatable_gpus=16, announced=(item(),))
    distrusted = {"cronjob": "precision 0.25 over 4 items in 7 days < 0.5"}
    inputs = PoolInput(
        policy(),
        snap,
        forecast(16.0),
        Mode.PREDICTIVE,
        window_seconds=WINDOW,
        distrusted=distrusted,
    )
    decision = plan(
        [inputs], budgets=Budgets(64, 1000, 1000, 3600), spent_gpu_hours_last_day=0, now=NOW
    )
    pool = decision.pools[0]
    assert pool.target_gpus == 0
    assert (
        "notice source cronjob not trusted (precision 0.25 over 4 items in 7 days < 0.5):"
        " its 16 GPUs due not planned" in pool.reasons
    )
    trusted = dataclasses.replace(inputs, distrusted={})
    decision = plan(
        [trusted], budgets=Budgets(64, 1000, 1000, 3600), spent_gpu_hours_last_day=0, now=NOW
    )
    assert decision.pools[0].target_gpus == 16


def test_a_handed_off_pool_still_covers_trusted_announced_work_and_only_that() -> None:
    """The hand-off judged the forecast; announced work has its own trust rule. A handed-off
    (or recovering) pool prewarms the trusted items due, less spare - never the forecast - on
    the shared budgets; a distrusted source's items, or none due, give 0."""
    snap = snapshot(running_gpus=16, allocatable_gpus=20, announced=(item(gpus=24),))
    budgets = Budgets(64, 1000, 1000, 3600)
    for mode in (Mode.HANDED_OFF, Mode.RECOVERING):
        handed = PoolInput(policy(), snap, forecast(200.0), mode, window_seconds=WINDOW)
        pool = plan([handed], budgets=budgets, spent_gpu_hours_last_day=0, now=NOW).pools[0]
        assert pool.mode is mode and pool.target_gpus == 24  # 24 due - 4 spare, whole 8s
        assert not pool.protect_nodepool
        assert any(
            "announced work due (24 GPUs, 4 spare) is still covered" in r for r in pool.reasons
        )
        cut = dataclasses.replace(handed, distrusted={"cronjob": "precision 0.25"})
        assert (
            plan([cut], budgets=budgets, spent_gpu_hours_last_day=0, now=NOW).pools[0].target_gpus
            == 0
        )
        exact = dataclasses.replace(handed, snapshot=dataclasses.replace(snap, allocatable_gpus=16))
        whole = plan([exact], budgets=budgets, spent_gpu_hours_last_day=0, now=NOW).pools[0]
        assert whole.target_gpus == 24  # 24 due, none spare: exactly three 8s, not four
        later = dataclasses.replace(handed, window_seconds=0)  # nothing due yet
        assert (
            plan([later], budgets=budgets, spent_gpu_hours_last_day=0, now=NOW).pools[0].target_gpus
            == 0
        )
    tight = Budgets(8, 1000, 1000, 3600)  # the shared caps hold for a handed-off pool too
    handed = PoolInput(policy(), snap, forecast(200.0), Mode.HANDED_OFF, window_seconds=WINDOW)
    assert (
        plan([handed], budgets=tight, spent_gpu_hours_last_day=0, now=NOW).pools[0].target_gpus == 8
    )


def test_an_item_that_leaves_by_its_latest_start_came_one_that_stays_past_it_did_not() -> None:
    ledger = NoticeLedger()
    came, late = item("came"), item("late")
    ledger.observe("a", [came, late], readable=None, now=NOW, window_seconds=WINDOW)
    # the run that came: its Job exists, the source no longer lists it
    ledger.observe("a", [late], readable=None, now=NOW + 300, window_seconds=WINDOW)
    # the other is still listed past its latest start (NOW + 900): did not come
    (outcome,) = ledger.observe("a", [late], readable=None, now=NOW + 901, window_seconds=WINDOW)
    assert [(o.key, o.came) for o in ledger.outcomes] == [("came", True), ("late", False)]
    assert outcome.held_gpu_hours == 16 * 900 / 3600  # due since NOW (within the window)
    # the run that came held its prewarm from NOW until its pods came: the cost of the notice,
    # not waste
    assert ledger.outcomes[0].held_gpu_hours == 16 * 300 / 3600
    assert ledger.precision("cronjob", now=NOW + 901) == (0.5, 2)
    assert ledger.waste_gpu_hours("cronjob", now=NOW + 901) == 4.0


def test_a_source_not_read_this_time_gives_no_verdict() -> None:
    ledger = NoticeLedger()
    ledger.observe("a", [item()], readable=None, now=NOW, window_seconds=WINDOW)
    assert ledger.observe("a", [], readable=frozenset(), now=NOW + 60, window_seconds=WINDOW) == []
    (outcome,) = ledger.observe(
        "a", [], readable=frozenset({"cronjob"}), now=NOW + 120, window_seconds=WINDOW
    )
    assert outcome.came


def test_below_half_precision_for_a_day_a_source_is_cut_and_restored_when_it_recovers() -> None:
    ledger = NoticeLedger()
    now = NOW
    for n in range(4):  # four runs announced that never came
        missed = item(f"miss-{n}", start=now + 300)
        ledger.observe("a", [missed], readable=None, now=now, window_seconds=WINDOW)
        ledger.observe("a", [missed], readable=None, now=now + 901, window_seconds=WINDOW)
        now += 1000
    assert ledger.precision("cronjob", now=now) == (0.0, 4)
    assert ledger.distrusted(now=now) == {}  # below, but not yet for a day
    assert ledger.distrusted(now=now + DISTRUST_AFTER_SECONDS - 1000) == {}
    now += DISTRUST_AFTER_SECONDS
    assert "cronjob" in ledger.distrusted(now=now)
    status = ledger.judged(SourceStatus("cronjob", True, 0), now=now)
    assert (status.trusted, status.precision, status.resolved) == (False, 0.0, 4)
    assert status.waste_gpu_hours == 4 * 16 * 900 / 3600
    for n in range(4):  # then four that came: 4 of 8 is 0.5, not below it
        ledger.observe(
            "a", [item(f"came-{n}", start=now + 300)], readable=None, now=now, window_seconds=WINDOW
        )
        ledger.observe("a", [], readable=None, now=now + 300, window_seconds=WINDOW)
        now += 1000
    assert ledger.distrusted(now=now) == {}
    # and a week later the old outcomes are gone: no verdict at all
    assert ledger.precision("cronjob", now=now + TRUST_WINDOW_SECONDS) == (None, 0)


def test_a_namespaces_misses_cut_its_own_items_not_the_sources_in_another_namespace() -> None:
    """Trust is per source and namespace: one team whose runs never come is cut after a day;
    the same source's items of another team, which come, are still planned."""
    ledger = NoticeLedger()
    now = NOW
    for n in range(6):
        missed = dataclasses.replace(item(f"miss-{n}", start=now + 300), namespace="no-quota")
        kept = dataclasses.replace(item(f"ok-{n}", start=now + 300), namespace="team")
        follow(ledger, [missed, kept], now)
        follow(ledger, [missed], now + 400, present=[("cronjob", f"ok-{n}")])
        follow(ledger, [], now + 901)
        now += 1000
    now += DISTRUST_AFTER_SECONDS
    cut = ledger.distrusted(now=now)
    assert list(cut) == ["cronjob/no-quota"]
    status = ledger.judged(SourceStatus("cronjob", True, 0), now=now)
    assert status.trusted and status.distrusted_namespaces == ("no-quota",)
    due = (
        dataclasses.replace(item("next-miss", start=now + 300), namespace="no-quota"),
        dataclasses.replace(item("next-ok", start=now + 300), namespace="team"),
    )
    snap = snapshot(observed_at=now, running_gpus=16, announced=due)
    assert planned_demand(snap, forecast(10.0), window_seconds=WINDOW, distrusted=cut) == 32.0


def test_fewer_than_four_resolved_items_is_no_verdict() -> None:
    ledger = NoticeLedger()
    for n in range(3):
        missed = item(f"miss-{n}")
        ledger.observe("a", [missed], readable=None, now=NOW, window_seconds=WINDOW)
        ledger.observe("a", [], readable=None, now=NOW + 901, window_seconds=WINDOW)
    assert ledger.precision("cronjob", now=NOW + 901) == (0.0, 3)
    assert ledger.distrusted(now=NOW + 901) == {}


def test_the_notice_each_item_came_with_is_measured_against_the_pools_window() -> None:
    """Announced a day ahead, a run comes with more notice than the 900 s window: ahead. A
    stage first read 300 s before it came had too little notice to prewarm it in time."""
    ledger = NoticeLedger()
    nightly, stage = item("nightly", start=NOW + 86400), item("stage", start=NOW + 86400, gpus=8)
    ledger.observe("a", [nightly], readable=None, now=NOW, window_seconds=WINDOW)
    ledger.observe("a", [nightly, stage], readable=None, now=NOW + 86100, window_seconds=WINDOW)
    ledger.observe("a", [], readable=None, now=NOW + 86400, window_seconds=WINDOW)
    by_key = {o.key: o for o in ledger.outcomes}
    assert (by_key["nightly"].notice_seconds, by_key["nightly"].ahead) == (86400, True)
    assert (by_key["stage"].notice_seconds, by_key["stage"].ahead) == (300, False)
    status = ledger.judged(SourceStatus("cronjob", True, 0), now=NOW + 86400)
    assert (status.came_gpus, status.ahead_gpus) == (24, 16)
    assert status.median_notice_seconds == (86400 + 300) / 2


def test_an_item_in_flight_at_a_restart_keeps_its_first_reading_and_its_held_prewarm() -> None:
    """A restart (another replica, the state read back from its ConfigMap) in the middle of an
    item's life: the notice it came with counts from its first reading, not from the restart,
    and one that then does not come is charged from when it first became due."""
    ledger = NoticeLedger()
    nightly, stage = item("nightly", start=NOW + 86400), item("stage", start=NOW + 600)
    ledger.observe("a", [nightly, stage], readable=None, now=NOW, window_seconds=WINDOW)
    state = ServiceState(last_tick=NOW)
    state.notice, state.notice_in_flight, state.notice_use = ledger.saved()
    restarted = NoticeLedger()
    read = ServiceState.from_dict(json.loads(json.dumps(state.to_dict())))
    restarted.restore(read.notice, read.notice_in_flight, read.notice_use)
    restarted.observe("a", [nightly], readable=None, now=NOW + 1800, window_seconds=WINDOW)
    restarted.observe("a", [], readable=None, now=NOW + 86400, window_seconds=WINDOW)
    by_key = {o.key: o for o in restarted.outcomes}
    assert (by_key["nightly"].came, by_key["nightly"].notice_seconds) == (True, 86400)
    assert not by_key["stage"].came  # still listed past its latest start
    assert by_key["stage"].held_gpu_hours == 16 * (NOW + 1200 - NOW) / 3600  # due since NOW
    unreadable = {"pools": {}, "ledger": {}, "notice_in_flight": [{"pool": 1}]}
    with pytest.raises(StateFormatError):  # fails closed (tests/faults/test_fail_closed_state.py)
        ServiceState.from_dict(unreadable)


MARKING = frozenset({"cronjob"})


def follow(ledger: NoticeLedger, items: list[AnnouncedItem], now: int, present: Any = ()) -> Any:
    """One reading of pool "a" whose pods are known: ``present`` (source, key) have pods."""
    return ledger.observe(
        "a",
        items,
        readable=frozenset({"cronjob", "kueue"}),
        now=now,
        window_seconds=WINDOW,
        present=frozenset(present),
        marking=MARKING,
    )


def test_an_item_comes_when_its_pods_come_not_when_it_leaves_the_reading() -> None:
    """A source that marks its pods: leaving the reading is no verdict (a CronJob moves on
    whether or not a pod is ever made); pods by the latest start are, listed or not."""
    ledger = NoticeLedger()
    run = item("run")  # due NOW + 300, latest NOW + 900
    follow(ledger, [run], NOW)
    assert follow(ledger, [], NOW + 300) == []  # left the reading: still open, no pod yet
    (late,) = follow(ledger, [], NOW + 901)  # no pod by its latest start: did not come
    assert not late.came and late.held_gpu_hours == 16 * 900 / 3600  # due from NOW to latest
    other = item("other")
    follow(ledger, [other], NOW)
    (came,) = follow(ledger, [other], NOW + 400, present=[("cronjob", "other")])
    assert came.came and came.notice_seconds == 400  # its pods came, still listed or not
    assert ledger.ended("a", "other") and ledger.ended("a", "run")
    assert ledger.saved()[1] == ()  # came while listed: judged once, not followed again
    assert follow(ledger, [other], NOW + 460, present=[("cronjob", "other")]) == []


def test_a_source_that_marks_no_pods_or_unknown_pods_keep_the_reading_rule() -> None:
    """Kueue's workloads (their pods stay unmarked) and the twin (pods not known): an item that
    leaves the reading by its latest start came."""
    ledger = NoticeLedger()
    held = item("wl", source="kueue")
    follow(ledger, [held], NOW)
    (came,) = follow(ledger, [], NOW + 60)
    assert came.came
    twin = NoticeLedger()
    twin.observe("a", [item("run")], readable=None, now=NOW, window_seconds=WINDOW)
    (came,) = twin.observe("a", [], readable=None, now=NOW + 60, window_seconds=WINDOW)
    assert came.came


def test_an_item_of_negative_gpus_or_pods_or_an_inverted_deadline_is_refused() -> None:
    """What a source makes of a tenant's object is checked once more where it becomes an item:
    a negative count on either side, or a latest start before the earliest, names the key."""
    base = item("bad")
    for change in ({"pods": -1}, {"gpus_per_pod": -1}, {"latest_start": base.earliest_start - 1}):
        with pytest.raises(ValueError, match=r"^bad: "):
            dataclasses.replace(base, **change)
    assert dataclasses.replace(base, pods=0, gpus_per_pod=0).gpus == 0  # nothing is no error


def test_shedding_none_withdraws_nothing() -> None:
    """``shed(0)`` (the state fits its bytes) keeps every item in flight and charges none."""
    ledger = NoticeLedger()
    ledger.observe("a", [item("x"), item("y")], readable=None, now=NOW, window_seconds=WINDOW)
    assert ledger.shed(0, now=NOW + 60) == []
    assert len(ledger.saved()[1]) == 2 and ledger.outcomes == [] and ledger.dropped == {}


def test_an_item_keeps_its_first_deadline_and_is_not_followed_again_once_ended() -> None:
    """Re-announced each tick with a later deadline (nothing to time it by, or a status its
    owner wrote), it is withdrawn at its first deadline and charged once; listing it again
    afterwards opens nothing."""
    ledger = NoticeLedger()
    for now in range(NOW, NOW + 601, 60):  # "due now" at every reading: latest = now + 600
        assert follow(ledger, [item("stage", start=now)], now) == []
    (gone,) = follow(ledger, [item("stage", start=NOW + 660)], NOW + 660)  # past NOW + 600
    assert not gone.came and gone.held_gpu_hours == 16 * 600 / 3600
    assert follow(ledger, [item("stage", start=NOW + 720)], NOW + 720) == []
    assert ledger.saved()[1] == ()  # nothing in flight: it is not held again


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(min_value=-9 * 86400, max_value=0),
            st.booleans(),
            st.sampled_from(["", "a", "b"]),
            st.sampled_from(["cronjob", "jobset"]),
        ),
        max_size=60,
    )
)
def test_the_trust_check_answers_as_the_scan_it_replaced(rows: list[Any]) -> None:
    """``distrusted_keys`` (arrays, once per reading) equals the per-moment scan it replaced
    (``bench.performance.trust_check.scan``) on any outcomes, in any order."""
    found = [
        Outcome(source, "a", "", came, NOW + at, namespace=namespace)
        for at, came, namespace, source in rows
    ]
    assert distrusted_keys(found, now=NOW) == scan(found, now=NOW)


def test_an_outcome_exactly_seven_days_old_has_left_the_trust_window() -> None:
    """The window is (t - 7 d, t]: four items that came exactly 7 days before the day's start
    no longer lift it, so four misses keep the source below 0.5 all day."""
    start = NOW - DISTRUST_AFTER_SECONDS
    found = [Outcome("cronjob", "a", "", True, start - TRUST_WINDOW_SECONDS) for _ in range(4)]
    found += [Outcome("cronjob", "a", "", False, start - 1000) for _ in range(4)]
    assert list(distrusted_keys(found, now=NOW)) == ["cronjob"]
    assert distrusted_keys(found, now=NOW) == scan(found, now=NOW)


def test_the_ended_items_remembered_are_bounded_newest_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """How many items end is the tenants' to decide: past ``MAX_ENDED`` the oldest are
    forgotten (followed once more at worst), the memory stays bounded."""
    monkeypatch.setattr("forecaster.core.notice.MAX_ENDED", 3)
    ledger = NoticeLedger()
    for n in range(5):  # named against time: the newest are kept, not the last by name
        follow(ledger, [item(f"run-{9 - n}")], NOW + n)
        follow(ledger, [], NOW + n, present=[("cronjob", f"run-{9 - n}")])
    ended = [ledger.ended("a", f"run-{9 - n}") for n in range(5)]
    assert ended == [False, False, True, True, True]


def test_past_the_cap_the_least_urgent_items_are_dropped_charged_and_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tenants decide how many items they announce: past ``MAX_IN_FLIGHT`` the ones due last
    are withdrawn at once - charged as not come for what was held for them, not followed again,
    counted - and the state that persists the rest stays bounded."""
    monkeypatch.setattr(notice_module, "MAX_IN_FLIGHT", 10)
    ledger = NoticeLedger()
    items = [item(f"k{i:02d}", start=NOW + 60 * i) for i in range(15)]
    ledger.observe("a", items, readable=None, now=NOW, window_seconds=3600)
    later = [item(f"k{i:02d}", start=NOW + 60 * i) for i in range(15)]
    resolved = ledger.observe("a", later, readable=None, now=NOW + 30, window_seconds=3600)
    assert resolved == []  # those dropped stay dropped: announcing them again buys nothing
    open_keys = sorted(f.item.key for f in ledger.saved()[1])
    assert open_keys == [f"k{i:02d}" for i in range(10)]  # the ten due first are followed
    dropped = [o for o in ledger.outcomes if not o.came]
    assert sorted(o.key for o in dropped) == [f"k{i:02d}" for i in range(10, 15)]
    assert all(o.at == NOW and o.held_gpu_hours == 0.0 for o in dropped)  # held from due to now
    assert ledger.dropped == {"cronjob": 5}
    assert ledger.judged(SourceStatus("cronjob", True), now=NOW + 30).dropped == 5  # status
    assert all(ledger.ended("a", f"k{i:02d}") for i in range(10, 15))


def test_a_namespace_over_its_share_of_the_day_is_left_out_for_every_source() -> None:
    """What a namespace's notice held in the last day: its ended items' held GPU-hours and
    those in flight since they became due; at its share, each of its sources' keys is left
    out, with why. Another namespace, an older day and items of no namespace never count."""
    day = 86400
    outcomes = [
        Outcome("cronjob", "a", "x", False, NOW - 3600, 30.0, namespace="greedy"),
        Outcome("cronjob", "a", "y", False, NOW - day - 1, 500.0, namespace="calm"),  # older
        Outcome("cronjob", "a", "z", False, NOW - 60, 900.0),  # no namespace
    ]
    due = dataclasses.replace(item("w", source="jobset"), namespace="greedy")
    flying = [InFlight(due, NOW - 2 * 3600, NOW - 2 * 3600)]  # 16 GPUs due for 2 h: 32
    out = over_share(outcomes, flying, now=NOW, limit=60.0)
    assert sorted(out) == ["cronjob/greedy", "jobset/greedy"]
    assert "held 62.0 GPU-hours of prewarm in a day, its share is 60.0" in out["jobset/greedy"]
    assert sorted(over_share(outcomes, flying, now=NOW, limit=62.0)) == sorted(out)  # at it
    assert over_share(outcomes, flying, now=NOW, limit=62.5) == {}


def test_a_namespaces_items_due_at_once_past_its_share_of_the_caps_are_left_out() -> None:
    """Per namespace, soonest first: at most ``share`` of each pool's cap on that pool and of
    the total cap over all pools; the rest is left out by item key, said on the plan; another
    namespace, items of no namespace and items already left out claim nothing of it."""

    def of(key: str, namespace: str, start: int, pool: str = "a") -> AnnouncedItem:
        return dataclasses.replace(item(key, start=start), pool=pool, namespace=namespace)

    first, second = of("t1", "tenant", NOW + 60), of("t2", "tenant", NOW + 120)
    other, bare, on_b = (
        of("o1", "other", NOW + 30),
        of("n1", "", NOW + 10),
        of("t3", "tenant", NOW + 90, "b"),
    )
    due = {"a": [second, other, bare, first], "b": [on_b]}
    caps = {"a": 32, "b": 64}
    out = over_gpu_share(due, caps, share=0.5, total_gpus=128, left_out={})
    assert {pool: list(keys) for pool, keys in out.items()} == {"a": ["t2"]}
    assert out["a"]["t2"] == (
        "namespace tenant's announced work due at once is past its share"
        " (16 of this pool's prewarm GPUs)"
    )
    out = over_gpu_share(due, caps, share=0.25, total_gpus=128, left_out={})
    assert {pool: sorted(keys) for pool, keys in out.items()} == {"a": ["o1", "t1", "t2"]}
    out = over_gpu_share(due, {"a": 64, "b": 64}, share=0.5, total_gpus=40, left_out={})
    assert {pool: list(keys) for pool, keys in out.items()} == {"b": ["t3"], "a": ["t2"]}
    assert out["b"]["t3"].endswith("(20 of all prewarm GPUs)")
    cut = {"cronjob/tenant": "not trusted"}  # already left out: claims none of the share
    assert over_gpu_share(due, caps, share=0.25, total_gpus=128, left_out=cut) == {
        "a": {"o1": out_of_pool("other", 8)}
    }

    left = over_gpu_share({"a": [first, second]}, caps, share=0.5, total_gpus=128, left_out={})
    inputs = PoolInput(
        policy(),
        snapshot(announced=(first, second)),
        forecast(0.0),
        Mode.PREDICTIVE,
        window_seconds=WINDOW,
        distrusted=left["a"],
    )
    pool = plan(
        [inputs], budgets=Budgets(64, 1000, 1000, 3600), spent_gpu_hours_last_day=0, now=NOW
    ).pools[0]
    assert pool.target_gpus == 16  # the first only
    assert f"{out_of_pool('tenant', 16)}: its 16 GPUs due not planned" in pool.reasons


def out_of_pool(namespace: str, gpus: int) -> str:
    return (
        f"namespace {namespace}'s announced work due at once is past its share"
        f" ({gpus} of this pool's prewarm GPUs)"
    )


def test_the_top_namespaces_are_those_whose_notice_held_the_most() -> None:
    outcomes = [
        Outcome("cronjob", "a", "1", False, NOW - 60, 30.0, namespace="greedy"),
        Outcome("jobset", "a", "2", True, NOW - 60, 10.0, namespace="greedy"),
        Outcome("cronjob", "a", "3", True, NOW - 60, 5.0, namespace="a-ml"),  # first by name
        Outcome("cronjob", "a", "4", False, NOW - 8 * 86400, 99.0, namespace="old"),  # gone
        Outcome("cronjob", "a", "5", False, NOW - 60, 99.0),  # no namespace
    ]
    top = top_namespaces(outcomes, now=NOW)
    assert [(n.namespace, n.resolved, n.precision) for n in top] == [
        ("greedy", 2, 0.5),
        ("a-ml", 1, 1.0),
    ]
    assert (top[0].held_gpu_hours, top[0].waste_gpu_hours) == (40.0, 30.0)
    assert top_namespaces(outcomes, now=NOW, count=1) == top[:1]
