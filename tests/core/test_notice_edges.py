"""The notice ledger at its edges (pure): the instants a rule flips at, what is remembered and
for how long, and what one source's or namespace's figures leave out - found by the mutation
tool (``bench/mutation``), which broke each of these lines and saw no test fail."""

from __future__ import annotations

import dataclasses
from typing import Any

from forecaster.core.notice import (
    DISTRUST_AFTER_SECONDS,
    ENDED_SECONDS,
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
from tests.factories import NOW

WINDOW = 900
MARKING = frozenset({"cronjob"})


def item(key: str, *, start: int = NOW + 300, gpus: int = 16, **changes: Any) -> AnnouncedItem:
    """16 GPUs on pool "a", due from ``start`` to ``start + 600``."""
    base = AnnouncedItem("a", 8, gpus // 8, False, start, start + 600, "cronjob", key)
    return dataclasses.replace(base, **changes)


def follow(ledger: NoticeLedger, items: list[AnnouncedItem], now: int, present: Any = ()) -> Any:
    return ledger.observe(
        "a",
        items,
        readable=frozenset({"cronjob"}),
        now=now,
        window_seconds=WINDOW,
        present=frozenset(present),
        marking=MARKING,
    )


def ended_at(ledger: NoticeLedger, key: str, now: int) -> None:
    """``key`` announced and its pods come at ``now``."""
    follow(ledger, [item(key, start=now)], now)
    follow(ledger, [], now, present=[("cronjob", key)])


def test_an_item_is_due_from_the_windows_edge_to_its_latest_start_both_included() -> None:
    run = item("run")  # earliest NOW + 300, latest NOW + 900
    assert run.due(NOW, within_seconds=300)  # starts exactly at the window's edge
    assert not run.due(NOW, within_seconds=299)
    assert run.due(NOW + 900, within_seconds=0)  # its latest start is still in time
    assert not run.due(NOW + 901, within_seconds=0)


def test_pods_at_the_latest_start_came_in_time() -> None:
    ledger = NoticeLedger()
    follow(ledger, [item("marked")], NOW)
    (came,) = follow(ledger, [item("marked")], NOW + 900, present=[("cronjob", "marked")])
    assert came.came
    kueue = NoticeLedger()  # a source that marks no pods: leaving the reading at the deadline
    kueue.observe("a", [item("wl")], readable=None, now=NOW, window_seconds=WINDOW)
    (left,) = kueue.observe("a", [], readable=None, now=NOW + 900, window_seconds=WINDOW)
    assert left.came


def test_notice_of_exactly_the_window_is_ahead() -> None:
    ledger = NoticeLedger()
    follow(ledger, [item("run")], NOW)
    (came,) = follow(ledger, [], NOW + WINDOW, present=[("cronjob", "run")])
    assert came.notice_seconds == WINDOW and came.ahead
    assert ledger.use.links[("a", "run")] == ("ahead", NOW + WINDOW)  # its use, followed as such


def test_an_item_judged_already_in_a_reading_leaves_the_rest_of_it_followed() -> None:
    ledger = NoticeLedger()
    follow(ledger, [item("done", start=NOW)], NOW)
    follow(ledger, [], NOW, present=[("cronjob", "done")])  # came: judged
    follow(ledger, [item("done", start=NOW), item("next")], NOW + 60)
    assert [f.item.key for f in ledger.saved()[1]] == ["next"]


def test_an_item_listed_at_its_latest_start_is_still_open() -> None:
    """A source marking no pods: listed at its latest start it may still come; listed after it,
    it did not."""
    ledger = NoticeLedger()
    run = item("wl", source="kueue")  # latest NOW + 900
    for now in (NOW, NOW + 900):
        assert ledger.observe("a", [run], readable=None, now=now, window_seconds=WINDOW) == []
    (late,) = ledger.observe("a", [run], readable=None, now=NOW + 901, window_seconds=WINDOW)
    assert not late.came


def test_what_an_item_held_is_never_below_nothing() -> None:
    ledger = NoticeLedger()
    follow(ledger, [item("far", start=NOW + 7200)], NOW)  # never within the window
    (gone,) = follow(ledger, [], NOW + 7801)
    assert not gone.came and gone.held_gpu_hours == 0.0
    # due at NOW; its pods seen after the clock stepped back 2 minutes: held nothing, not less
    stepped = NoticeLedger()
    follow(stepped, [item("run", start=NOW)], NOW)
    (came,) = follow(stepped, [], NOW - 120, present=[("cronjob", "run")])
    assert came.came and came.held_gpu_hours == 0.0


def test_outcomes_are_kept_for_the_trust_window_and_a_day() -> None:
    """Precision is judged over 7 days at every moment of the last day: an outcome is kept
    8 days, not dropped a day early."""
    ledger = NoticeLedger()
    follow(ledger, [item("old", start=NOW)], NOW)
    follow(ledger, [], NOW + 10, present=[("cronjob", "old")])
    later = NOW + 10 + TRUST_WINDOW_SECONDS - 3600  # 6 days 23 h on
    follow(ledger, [], later)
    assert ledger.precision("cronjob", now=later) == (1.0, 1)
    week = NOW + 10 + TRUST_WINDOW_SECONDS  # exactly 7 days on: out of the window
    assert ledger.precision("cronjob", now=week) == (None, 0)
    gone = NOW + 10 + TRUST_WINDOW_SECONDS + DISTRUST_AFTER_SECONDS
    follow(ledger, [], gone - 1)
    assert [o.key for o in ledger.outcomes] == ["old"]  # a second short of 8 days: still there
    follow(ledger, [], gone)
    assert ledger.outcomes == []


def test_ended_items_are_remembered_for_a_day_to_the_second() -> None:
    ledger = NoticeLedger()
    ended_at(ledger, "first", NOW)
    ended_at(ledger, "second", NOW + ENDED_SECONDS // 2)
    follow(ledger, [], NOW + ENDED_SECONDS - 1)
    assert ledger.ended("a", "first") and ledger.ended("a", "second")
    follow(ledger, [], NOW + ENDED_SECONDS)  # a day after it ended: forgotten
    assert not ledger.ended("a", "first") and ledger.ended("a", "second")


def test_shedding_one_withdraws_the_least_urgent_one() -> None:
    ledger = NoticeLedger()
    follow(ledger, [item("soon"), item("later", start=NOW + 600)], NOW)
    (shed,) = ledger.shed(1, now=NOW + 60)
    assert shed.key == "later" and not shed.came
    assert [f.item.key for f in ledger.saved()[1]] == ["soon"]
    assert ledger.dropped == {"cronjob": 1}


def test_a_sources_status_counts_its_own_outcomes_only() -> None:
    ledger = NoticeLedger()
    ledger.outcomes = [
        Outcome("jobset", "a", "j", True, NOW - 60, gpus=32, ahead=True),
        Outcome("cronjob", "a", "c", True, NOW - 60, gpus=16, ahead=True),
        Outcome("cronjob", "a", "n", False, NOW - 60, 4.0, gpus=8),
        Outcome("cronjob", "a", "o", True, NOW - TRUST_WINDOW_SECONDS, gpus=64),  # 7 days old
        Outcome("cronjob", "a", "w", False, NOW - TRUST_WINDOW_SECONDS, 9.0, gpus=8),
    ]
    status = ledger.judged(SourceStatus("cronjob", True), now=NOW)
    assert (status.came_gpus, status.ahead_gpus, status.dropped) == (16, 16, 0)
    assert status.waste_gpu_hours == 4.0  # the 7-day-old waste is out of the window


def test_the_trust_check_answers_with_a_single_outcome_and_says_its_figures() -> None:
    ledger = NoticeLedger()
    ledger.outcomes = [Outcome("cronjob", "a", "x", False, NOW - 60, namespace="t")]
    assert ledger.distrusted(now=NOW) == {}  # one outcome: too few to judge
    before = NOW - DISTRUST_AFTER_SECONDS - 3600  # 1 of 4 came before the day began
    bad = [Outcome("cronjob", "a", f"k{i}", i == 0, before + 60 * i) for i in range(4)]
    bad += [Outcome("cronjob", "a", "late-miss", False, NOW - 120)]
    bad += [Outcome("cronjob", "a", "late-hit", True, NOW - 60)]
    bad += [Outcome("cronjob", "a", "last-hit", True, NOW)]
    assert distrusted_keys(bad, now=NOW) == {  # said as it is now: 3 of 7
        "cronjob": "precision 0.43 over 7 items in 7 days < 0.5 for a day"
    }


def test_a_moment_an_outcome_leaves_the_window_counts() -> None:
    """Below the threshold when the day began, at every arrival and now - but at the threshold
    for an hour when an old miss left the window: trusted (not below at *every* moment)."""
    two_days = NOW - 2 * 86400
    outcomes = [Outcome("cronjob", "a", f"h{i}", True, two_days) for i in range(3)]
    outcomes += [Outcome("cronjob", "a", f"m{i}", False, two_days) for i in range(3)]
    outcomes.append(Outcome("cronjob", "a", "leaves", False, NOW - TRUST_WINDOW_SECONDS - 7200))
    outcomes.append(Outcome("cronjob", "a", "arrives", False, NOW - 3600))
    assert distrusted_keys(outcomes, now=NOW) == {}  # 3 of 6 from NOW - 2 h to NOW - 1 h
    outcomes.append(Outcome("cronjob", "a", "more", False, two_days))
    assert "cronjob" in distrusted_keys(outcomes, now=NOW)  # 3 of 7 at that moment too


def test_a_namespaces_day_is_the_last_86400_seconds() -> None:
    day = [Outcome("cronjob", "a", "x", False, NOW - 86400, 30.0, namespace="t")]
    assert over_share(day, [], now=NOW, limit=1.0) == {}  # exactly a day old: not counted
    day.append(Outcome("cronjob", "a", "y", False, NOW - 86399, 1.0, namespace="t"))
    assert list(over_share(day, [], now=NOW, limit=1.0)) == ["cronjob/t"]


def test_a_namespaces_share_counts_work_in_flight_to_the_second() -> None:
    only = dataclasses.replace(item("w"), namespace="fresh")  # of no ended item: in flight only
    held = [InFlight(only, NOW - 5000, NOW - 5000)]  # 16 GPUs due for 5000 s: 22.2 GPU-hours
    assert list(over_share([], held, now=NOW, limit=22.2)) == ["cronjob/fresh"]
    assert over_share([], held, now=NOW, limit=22.3) == {}
    just = [InFlight(only, NOW, NOW)]  # due this instant: nothing held yet
    assert over_share([], just, now=NOW, limit=0.001) == {}
    stepped = [*held, InFlight(only, NOW + 120, NOW)]  # due "after now": the clock stepped back
    assert list(over_share([], stepped, now=NOW, limit=22.22)) == ["cronjob/fresh"]


def test_a_namespaces_gpus_due_at_once_meet_the_total_share_exactly() -> None:
    """Of a 64-GPU total at share 0.5: 32 GPUs fit on two pools, one GPU more does not - and
    the reason names the total, not the pool, when the pool's own share is met, not passed."""
    runs = [
        dataclasses.replace(item(f"t{i}", start=NOW + i), pool=pool, namespace="tenant")
        for i, pool in enumerate(("a", "b", "b"))
    ]
    runs[2] = dataclasses.replace(runs[2], gpus_per_pod=1, pods=1)  # one GPU past the total
    due = {"a": runs[:1], "b": runs[1:]}
    out = over_gpu_share(due, {"a": 64, "b": 34}, share=0.5, total_gpus=64, left_out={})
    assert {pool: list(keys) for pool, keys in out.items()} == {"b": ["t2"]}
    assert "(32 of all prewarm GPUs)" in out["b"]["t2"]  # the pool's 17 are met, not passed
    tight = over_gpu_share(due, {"a": 64, "b": 32}, share=0.5, total_gpus=64, left_out={})
    assert "(16 of this pool's prewarm GPUs)" in tight["b"]["t2"]
    # one key due at once on two pools: the first pool by name claims first
    twin = {pool: [dataclasses.replace(runs[0], pool=pool)] for pool in ("b", "a")}
    out = over_gpu_share(twin, {"a": 64, "b": 64}, share=0.5, total_gpus=32, left_out={})
    assert {pool: list(keys) for pool, keys in out.items()} == {"b": ["t0"]}


def test_the_top_namespaces_are_ten_by_what_they_held() -> None:
    outcomes = [
        Outcome("cronjob", "a", f"k{n}", False, NOW - 60, float(n), namespace=f"ns{n:02d}")
        for n in range(11)
    ]
    outcomes.append(
        Outcome("cronjob", "a", "old", False, NOW - TRUST_WINDOW_SECONDS, 99.0, namespace="z")
    )
    top = top_namespaces(outcomes, now=NOW)
    assert [n.namespace for n in top] == [f"ns{n:02d}" for n in range(10, 0, -1)]
