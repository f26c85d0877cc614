"""The daemon's own gauges (a tick's duration, FinOps refreshes) and its stuck judgement.

The FinOps gauges integrate a whole day of the trail, so they are refreshed at most once a
minute of tick time (``SPEND_METRICS_EVERY_SECONDS``): not on a tick at the same time, not
within the minute, again at the minute and after the clock stepped back. A tick's duration is
wall time spent in it, not a clock reading. A daemon is stuck once no tick has completed for
longer than its limit (not at the limit), counted from the first ask; the twin never is.
"""

from __future__ import annotations

from forecaster.service.daemon import SPEND_METRICS_EVERY_SECONDS, Daemon
from forecaster.testing.fakes import T0


def test_the_finops_gauges_are_refreshed_once_a_minute_of_tick_time(daemon: Daemon) -> None:
    refreshed: list[int] = []
    observe = daemon.metrics.observe_spend

    def counting(spend: dict[str, object]) -> None:
        refreshed.append(daemon.last.at if daemon.last else -1)
        observe(spend)  # type: ignore[arg-type]

    daemon.metrics.observe_spend = counting  # type: ignore[method-assign]
    step = SPEND_METRICS_EVERY_SECONDS
    for at in (T0, T0, T0 + step - 1, T0 + step, T0 + step + 1, T0 + step - 1, T0 - 600):
        assert daemon.reconcile(at) is not None
    assert refreshed == [T0, T0 + step, T0 + step - 1, T0 - 600]  # a second back: refreshed


def test_a_ticks_duration_is_the_time_spent_in_it(daemon: Daemon) -> None:
    daemon.reconcile(T0)
    duration = daemon.metrics.duration.collect()[0]
    total = next(s.value for s in duration.samples if s.name.endswith("_sum"))
    assert 0 < total < 60


def test_stuck_is_judged_past_the_limit_not_at_it(daemon: Daemon) -> None:
    now = [1000.0]
    daemon.monotonic = lambda: now[0]
    daemon.stuck_after_seconds = 300
    assert not daemon.stuck()  # the clock starts at the first ask
    now[0] += 300
    assert not daemon.stuck()
    now[0] += 1
    assert daemon.stuck()
    daemon.stuck_after_seconds = None  # the embedded twin: never stuck
    assert not daemon.stuck()
