"""The training job's operating-point choice: the pool's own history replayed per quantile.

Cases: reactive first, then each quantile replayed as the daemon would run it - its quantile in
the loop, the GPU-hours/day cap set to the budget share of reactive's GPU-hours, the SLO
following the quantile - over the history only (no job after its end), measured on its last
``measure_seconds``, with the loop's simulated-time logs kept out of the job's log; given the
pool's pods, the replays run them, cut to the history; without, the demand level as pods of
``demand_pod_gpus`` (whole nodes by default, at most); a wait target replays the candidates
under the configured cap and keeps it; a history too short to train the replays
gives no point, and says why.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pytest

from forecaster.app.replay_policies import replay_policy
from forecaster.core.error_budget import SloPolicy
from forecaster.core.jobs import JobTrace
from forecaster.core.operating_point import Budget
from forecaster.durations import DAY
from forecaster.simulation.operating_point import choose_operating_point
from forecaster.simulation.replay import ReplaySetup
from forecaster.simulation.twin import Policy
from tests.factories import REPLAY_T0, bursty, setup


def test_each_quantile_is_replayed_as_the_daemon_runs_it_under_the_budget_cap(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Where the training job's choice parts from the frontier's: both skip floors by one rule
    (``core.operating_point.larger_floor_worth_trying``) and choose with one function
    (``core.operating_point.choose``), but the training job replays each candidate under the
    GPU-hours/day cap its budget sets - as the daemon will then run it - while the frontier
    replays each once under the configured caps and judges it for every budget. A floor that
    fits a budget on average but not each day's cap is chosen by the frontier, not here."""
    history, _ = bursty(3, seed=3, start=REPLAY_T0)
    end = history.end + history.step_seconds
    seen: list[tuple[str, ReplaySetup]] = []

    def spy(name: str, which: ReplaySetup, *, jobs: JobTrace) -> Policy:
        assert jobs.submit.max() < end  # the history and nothing after it
        seen.append((name, which))
        return replay_policy(name, which, jobs=jobs)

    configured = dataclasses.replace(setup(3, cap=64), slo=SloPolicy(target_exceedance=0.05))
    loop_log = logging.getLogger("forecaster.reconcile.loop")
    with caplog.at_level(logging.DEBUG), caplog.at_level(logging.DEBUG, loop_log.name):
        # a level of the loop's own (``replay`` sets one) must not let its records through
        point = choose_operating_point(
            history,
            configured,
            make_policy=spy,
            quantiles=(0.8, 0.95),
            floors_gpus=(0,),
            budget=Budget(percent=10),
            measure_seconds=DAY,
        )
        assert loop_log.level == logging.DEBUG  # restored
    assert point is not None
    assert [name for name, _ in seen] == ["reactive", "predictive", "predictive"]
    for _, which in seen:
        assert (which.start, which.warmup_end, which.end) == (history.start, end - DAY, end)
    assert point.window == (end - DAY, end)
    assert point.gpu_hours_per_day_budget == pytest.approx(0.1 * point.reactive_gpu_hours_per_day)
    assert point.reactive_gpu_hours_per_day > 0
    for (_, which), q in zip(seen[1:], (0.8, 0.95), strict=True):
        assert which.plan_quantile == q
        assert which.budgets.max_prewarm_gpu_hours_per_day == pytest.approx(
            point.gpu_hours_per_day_budget
        )
        assert which.slo_policy.target_exceedance == pytest.approx(max(0.05, 1 - q))
        assert which.slo_policy.max_waste_gpu_hours_per_day == pytest.approx(
            point.gpu_hours_per_day_budget
        )
    assert [c.quantile for c in point.candidates] == [0.8, 0.95]
    assert all(c.cap_breaches == 0 for c in point.candidates)
    assert point.quantile in (0.8, 0.95) and f"P{point.quantile * 100:g}" in point.reason
    simulated = [r for r in caplog.records if r.name.startswith("forecaster.reconcile")]
    assert simulated == []  # hand-offs in simulated time are not live events


def test_with_the_pools_pods_the_replays_run_them_within_the_history() -> None:
    history, _ = bursty(3, seed=3, start=REPLAY_T0)
    end = history.end + history.step_seconds
    pods = JobTrace(  # one before the history still running in it, two in it, one after it
        submit=np.array([history.start - 600, history.start + 3600, end - 7200, end + 60.0]),
        duration=np.array([7200, 1800, 10_800, 600.0]),
        gpus=np.array([8, 16, 4, 2]),
    )
    replayed: list[JobTrace] = []

    def spy(name: str, which: ReplaySetup, *, jobs: JobTrace) -> Policy:
        replayed.append(jobs)
        return replay_policy(name, which, jobs=jobs)

    point = choose_operating_point(
        history,
        setup(3),
        make_policy=spy,
        quantiles=(0.9,),
        budget=Budget(percent=10),
        measure_seconds=DAY,
        pods=pods,
    )
    assert point is not None and point.replayed == "pods"
    assert "the pool's pods" in point.reason
    for jobs in replayed:
        assert jobs.submit.tolist() == [history.start, history.start + 3600, end - 7200]
        assert jobs.duration.tolist() == [6600, 1800, 7200]  # cut at the history's ends
        assert jobs.gpus.tolist() == [8, 16, 4]


@pytest.mark.parametrize(("pod_gpus", "largest"), [(None, 8), (1, 1), (4, 4), (64, 8)])
def test_without_pods_the_demand_is_replayed_as_pods_of_the_configured_size(
    pod_gpus: int | None, largest: int
) -> None:
    """``operating_point.demand_pod_gpus``: whole nodes by default, and never above one."""
    history, _ = bursty(2, seed=3, start=REPLAY_T0)
    sizes: set[int] = set()

    def spy(name: str, which: ReplaySetup, *, jobs: JobTrace) -> Policy:
        sizes.update(jobs.gpus.tolist())
        return replay_policy("reactive", which, jobs=jobs)

    choose_operating_point(
        history,
        setup(2),
        make_policy=spy,
        quantiles=(0.9,),
        budget=Budget(percent=10),
        measure_seconds=DAY // 2,
        demand_pod_gpus=pod_gpus,
    )
    assert max(sizes) == largest


def test_a_wait_target_replays_the_candidates_under_the_configured_cap() -> None:
    history, _ = bursty(3, seed=3, start=REPLAY_T0)
    capped: list[float] = []

    def spy(name: str, which: ReplaySetup, *, jobs: JobTrace) -> Policy:
        capped.append(which.budgets.max_prewarm_gpu_hours_per_day)
        return replay_policy(name, which, jobs=jobs)

    configured = setup(3, cap=64)
    point = choose_operating_point(
        history,
        configured,
        make_policy=spy,
        quantiles=(0.9,),
        budget=Budget(p95_wait_s=600),
        measure_seconds=DAY,
    )
    ceiling = configured.budgets.max_prewarm_gpu_hours_per_day
    assert capped == [ceiling, ceiling]  # reactive, then P90 under the operator's own cap
    assert point is not None and point.gpu_hours_per_day_budget == ceiling
    assert point.p95_wait_target_s == 600


def test_a_history_too_short_to_train_the_replays_gives_no_point(
    caplog: pytest.LogCaptureFixture,
) -> None:
    history, _ = bursty(1.5, seed=3, start=REPLAY_T0)
    with caplog.at_level(logging.WARNING):
        point = choose_operating_point(
            history,
            setup(2),
            make_policy=replay_policy,
            quantiles=(0.8,),
            budget=Budget(percent=10),
            measure_seconds=DAY,
        )
    assert point is None
    assert any("leave no day to train the replays" in m for m in caplog.messages)


def test_floors_are_tried_per_quantile_from_the_smallest_until_one_is_over_the_budget() -> None:
    """A larger floor only costs more: once one is over the budget the larger are skipped, and
    the chosen point carries its floor to the pool."""
    history, _ = bursty(3, seed=3, start=REPLAY_T0)
    tried: list[tuple[float, int]] = []

    def floor_only(name: str, which: ReplaySetup, *, jobs: JobTrace) -> Policy:
        # the floor as a constant headroom: GPU-hours grow with it, whatever the quantile
        if name == "reactive":
            return replay_policy(name, which, jobs=jobs)
        tried.append((which.plan_quantile, which.floor_gpus))
        return replay_policy(f"static:{which.floor_gpus}", which, jobs=jobs)

    point = choose_operating_point(
        history,
        setup(3, cap=64),
        make_policy=floor_only,
        quantiles=(0.8, 0.9),
        floors_gpus=(48, 0, 8, 16),
        budget=Budget(percent=1),
        measure_seconds=DAY,
    )
    assert point is not None
    over = [c for c in point.candidates if c.gpu_hours > point.reactive_gpu_hours_per_day * 1.01]
    within = [c for c in point.candidates if c not in over]
    assert len(over) == 2 and {c.quantile for c in over} == {0.8, 0.9}  # one per quantile
    assert tried == [(c.quantile, c.floor_gpus) for c in point.candidates]
    assert [f for q, f in tried if q == 0.8] == sorted(f for q, f in tried if q == 0.8)
    assert len(tried) < 8  # the floors beyond the first over the budget were not replayed
    best = min(within, key=lambda c: (c.mean_wait_s, c.gpu_hours))
    assert (point.quantile, point.floor_gpus) == (best.quantile, best.floor_gpus)
    assert point.label in point.reason
