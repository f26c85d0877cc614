"""GPU-hours of announced work by the notice its item gave (``core.notice_use``), per pool and
source: the share of a pool's work that came with notice enough to be warm."""

from __future__ import annotations

import json

import pytest

from forecaster.core.notice import AnnouncedItem, NoticeLedger
from forecaster.core.notice_use import (
    AHEAD,
    ALL,
    DAY_SECONDS,
    MAX_STEP_SECONDS,
    SHORT,
    UNMEASURED,
    NoticeUse,
    spread,
)
from forecaster.reconcile.state import ServiceState, StateFormatError
from tests.factories import NOW

WINDOW = 900


def item(key: str, *, start: int, gpus: int = 8, source: str = "cronjob") -> AnnouncedItem:
    return AnnouncedItem("a", gpus, 1, False, start, start + 600, source, key)


def came(ledger: NoticeLedger, key: str, *, first: int, at: int, source: str = "cronjob") -> None:
    """``key`` read first at ``first``, its pods come at ``at`` (it leaves the reading)."""
    ledger.observe(
        "a", [item(key, start=at, source=source)], readable=None, now=first, window_seconds=WINDOW
    )
    ledger.observe("a", [], readable=None, now=at, window_seconds=WINDOW)


def test_pods_count_their_gpu_hours_with_the_notice_their_item_gave() -> None:
    """Nightly came an hour after it was first read (>= the window: ahead), stage 5 minutes
    after (short); pods of announced work whose item was never seen count as unmeasured. Each
    reading's GPUs hold until the next."""
    ledger = NoticeLedger()
    came(ledger, "nightly", first=NOW - 3600, at=NOW)
    came(ledger, "stage", first=NOW - 300, at=NOW, source="jobset")
    running = (("cronjob", "nightly", 8), ("jobset", "stage", 4), ("cronjob", "older", 2))
    ledger.use.record("a", running_gpus=20, announced=running, now=NOW)
    ledger.use.record("a", running_gpus=20, announced=running, now=NOW + 600)
    hours = ledger.use.gpu_hours("a", now=NOW + 600)
    assert hours == {
        ("", "all"): 20 * 600 / 3600,
        ("cronjob", AHEAD): 8 * 600 / 3600,
        ("jobset", SHORT): 4 * 600 / 3600,
        ("cronjob", UNMEASURED): 2 * 600 / 3600,
    }
    cron, jobset = ledger.by_pool(["a"], now=NOW + 600)
    assert (cron.source, cron.precision, cron.resolved) == ("cronjob", 1, 1)
    assert cron.ahead_share == pytest.approx(0.4)  # 8 of the pool's 20 GPUs
    assert cron.notice_seconds == (3600, 3600, 3600)
    assert (jobset.source, jobset.ahead_share) == ("jobset", 0.0)
    assert ledger.by_pool(["b"], now=NOW + 600) == ()  # per pool


def test_a_gap_longer_than_a_step_is_not_counted_and_old_days_leave_the_window() -> None:
    """A daemon down for a day did not see its pods run: at most ``MAX_STEP_SECONDS`` of the
    last reading count; what ran 8 days ago is out of the 7-day figures."""
    use = NoticeUse()
    use.record("a", running_gpus=10, announced=(), now=NOW)
    use.record("a", running_gpus=10, announced=(), now=NOW + 86400)
    assert use.gpu_hours("a", now=NOW + 86400) == {("", "all"): 10 * MAX_STEP_SECONDS / 3600}
    use.record("a", running_gpus=10, announced=(), now=NOW + 8 * 86400)
    assert use.gpu_hours("a", now=NOW + 8 * 86400) == {}


def test_a_link_lasts_while_its_pods_run_and_a_restart_keeps_links_and_totals() -> None:
    """A week-long run keeps its link while its pods are seen (past a day after it came); the
    totals and links go through the persisted state (a restart forgets only the last reading:
    the gap over it is not counted)."""
    ledger = NoticeLedger()
    came(ledger, "nightly", first=NOW - 3600, at=NOW)
    running = (("cronjob", "nightly", 8),)
    for at in range(NOW, NOW + 2 * 86400 + 1, 600):
        ledger.use.record("a", running_gpus=8, announced=running, now=at)
    end = NOW + 2 * 86400
    assert ledger.use.gpu_hours("a", now=end)[("cronjob", AHEAD)] == pytest.approx(2 * 24 * 8)
    state = ServiceState(last_tick=end)
    state.notice, state.notice_in_flight, state.notice_use = ledger.saved()
    read = ServiceState.from_dict(json.loads(json.dumps(state.to_dict())))
    restarted = NoticeLedger()
    restarted.restore(read.notice, read.notice_in_flight, read.notice_use)
    restarted.use.record("a", running_gpus=8, announced=running, now=end + 600)
    restarted.use.record("a", running_gpus=8, announced=running, now=end + 1200)
    hours = restarted.use.gpu_hours("a", now=end + 1200)
    assert hours[("cronjob", AHEAD)] == pytest.approx(2 * 24 * 8 + 8 * 600 / 3600)
    assert ("cronjob", UNMEASURED) not in hours
    damaged = {"pools": {}, "ledger": {}, "notice_use": {"seconds": [["a"]]}}
    with pytest.raises(StateFormatError):  # fails closed (tests/faults/test_fail_closed_state.py)
        ServiceState.from_dict(damaged)


def test_a_link_is_forgotten_a_day_after_its_pods_were_last_seen() -> None:
    use = NoticeUse()
    use.came("a", "nightly", ahead=True, at=NOW)
    use.record("a", running_gpus=0, announced=(), now=NOW + 86400)
    assert ("a", "nightly") in use.links
    use.record("a", running_gpus=0, announced=(), now=NOW + 86401)
    assert use.links == {}


def test_the_spread_is_by_nearest_rank() -> None:
    assert spread([]) is None
    assert spread([300]) == (300, 300, 300)
    assert spread(range(0, 1100, 100)) == (100, 500, 900)


def test_the_window_asked_is_the_last_seven_utc_days_whatever_was_last_recorded() -> None:
    """Asked later than the last reading, the window still ends at ``now``: a day in it counts
    to its last second, the day before it does not."""
    day = (NOW // DAY_SECONDS) * DAY_SECONDS
    use = NoticeUse()
    use.record("a", running_gpus=8, announced=(), now=day + 3600)
    use.record("a", running_gpus=8, announced=(), now=day + 3600 + 450)  # 8 GPUs x 450 s: 1 h
    assert use.gpu_hours("a", now=day + 7 * DAY_SECONDS - 1) == {("", ALL): 1.0}
    assert use.gpu_hours("a", now=day + 7 * DAY_SECONDS) == {}
