"""The operating point: the quantile chosen for a GPU-hours budget, and what follows from it.

Cases: the lowest mean wait within the budget wins (GPU-hours break ties); with none within,
the cheapest is chosen and flagged; any candidate set (property): the choice is within budget
whenever one is, and no candidate within budget waits less; the cap is the budget share of
reactive's GPU-hours a day; the SLO follows the quantile (never tighter than its design misses,
never tighter than configured) and the waste budget the cap; the shared GPU-hours cap follows
the pools' points only when every pool has one; a P95 wait target picks the cheapest candidate
within it (with none, the lowest P95, flagged; any candidate set, property), keeps the
configured cap as its ceiling and leaves the shared cap alone; the JSON form round-trips
(older documents without the newer fields too) and refuses nonsense.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from forecaster.core.error_budget import SloPolicy
from forecaster.core.operating_point import (
    Budget,
    Candidate,
    OperatingPoint,
    cheapest_within_wait,
    choose,
    following_the_point,
    following_the_points,
    operating_point,
)
from forecaster.core.policy import Budgets

DAY = 86400


def cand(q: float, gpu_hours: float, mean: float) -> Candidate:
    return Candidate(q, gpu_hours, mean, 3 * mean, mean / 1000)


def test_the_lowest_mean_wait_within_the_budget_wins() -> None:
    candidates = [
        cand(0.8, 1040, 50),
        cand(0.9, 1049, 40),
        cand(0.95, 1080, 20),
        cand(0.98, 1049, 40),
    ]
    choice = choose(candidates, reactive_gpu_hours=1000, budget_percent=5)
    assert choice is not None and choice.within_budget
    assert choice.candidate.quantile == 0.9  # 0.95 waits less but costs +8 %


def test_with_none_within_the_budget_the_cheapest_is_chosen_and_flagged() -> None:
    choice = choose(
        [cand(0.8, 1100, 10), cand(0.9, 1090, 50)], reactive_gpu_hours=1000, budget_percent=5
    )
    assert choice is not None and not choice.within_budget and choice.candidate.quantile == 0.9
    assert choose([], reactive_gpu_hours=1000, budget_percent=5) is None


@given(
    st.lists(st.tuples(st.floats(900, 1200), st.floats(0, 500)), min_size=1, max_size=6),
    st.floats(1, 20),
)
def test_the_choice_is_the_best_within_budget_whatever_the_candidates(
    rows: list[tuple[float, float]], budget: float
) -> None:
    candidates = [cand(0.6 + i * 0.05, g, m) for i, (g, m) in enumerate(rows)]
    choice = choose(candidates, reactive_gpu_hours=1000, budget_percent=budget)
    assert choice is not None
    within = [c for c in candidates if c.gpu_hours <= 1000 * (1 + budget / 100)]
    assert choice.within_budget == bool(within)
    if within:
        assert choice.candidate in within
        assert all(choice.candidate.mean_wait_s <= c.mean_wait_s for c in within)
    else:
        assert all(choice.candidate.gpu_hours <= c.gpu_hours for c in candidates)


def point(quantile: float = 0.8, *, budget: float = 5) -> OperatingPoint:
    found = operating_point(
        [cand(quantile, 2 * 1000 * (1 + budget / 200), 30)],
        reactive_gpu_hours=2 * 1000,
        budget=Budget(percent=budget),
        window=(0, 2 * DAY),
    )
    assert found is not None
    return found


def test_the_cap_is_the_budget_share_of_reactive_gpu_hours_a_day() -> None:
    p = point(budget=5)
    assert p.reactive_gpu_hours_per_day == pytest.approx(1000)  # 2000 GPU-h over 2 days
    assert p.gpu_hours_per_day_budget == pytest.approx(50)
    assert p.quantile == 0.8 and p.within_budget
    assert "P80" in p.reason and "+2.5%" in p.reason and "within +5 % GPU-hours" in p.reason
    assert (p.budget, p.budget_percent) == ("+5 % GPU-hours", pytest.approx(5))


def test_a_budget_in_dollars_is_gpu_hours_at_the_pools_price() -> None:
    dollars = Budget(dollars_per_day=100.0, price_per_gpu_hour=4.0)
    assert dollars.gpu_hours_per_day(1000.0) == pytest.approx(25.0) and dollars.label == "$100/day"
    found = operating_point(
        [cand(0.8, 2020, 40), cand(0.95, 2060, 20)],  # +1 % and +3 % of 2000 GPU-h in 2 days
        reactive_gpu_hours=2000,
        budget=dollars,
        window=(0, 2 * DAY),
    )
    assert found is not None and found.quantile == 0.8  # 25 GPU-h a day is +2.5 %
    assert found.gpu_hours_per_day_budget == pytest.approx(25.0)
    assert found.budget_percent == pytest.approx(2.5) and "$100/day (+2.5 %)" in found.reason
    for bad in (
        {},
        {"percent": 5, "dollars_per_day": 100},
        {"percent": 5, "p95_wait_s": 60},
        {"dollars_per_day": 100},
    ):
        with pytest.raises(ValueError, match="budget"):
            Budget(**bad)  # type: ignore[arg-type]


def test_the_slo_follows_the_quantile_and_the_waste_budget_the_cap() -> None:
    slo = following_the_point(SloPolicy(target_exceedance=0.05), point(0.8))
    assert slo.target_exceedance == pytest.approx(0.2)  # a P80 plan misses 20 % by design
    assert slo.max_waste_gpu_hours_per_day == pytest.approx(50)
    looser = following_the_point(SloPolicy(target_exceedance=0.3), point(0.8))
    assert looser.target_exceedance == pytest.approx(0.3)  # a looser configured SLO is kept


def test_the_shared_cap_follows_the_points_only_when_every_pool_has_one() -> None:
    budgets = Budgets(64, 200.0, 200.0, 3600)
    both = following_the_points(budgets, [point(budget=5), point(budget=10)])
    assert both.max_prewarm_gpu_hours_per_day == pytest.approx(50 + 100)
    assert (both.max_total_prewarm_gpus, both.max_cost_per_hour) == (64, 200.0)
    assert following_the_points(budgets, [point(), None]) == budgets
    assert following_the_points(budgets, []) == budgets


def waits(q: float, gpu_hours: float, p95: float) -> Candidate:
    return Candidate(q, gpu_hours, p95 / 3, p95, 0.0)


def test_a_wait_target_picks_the_cheapest_within_it_under_the_configured_cap() -> None:
    target = Budget(p95_wait_s=120)
    assert target.label == "P95 wait <= 120 s"
    with pytest.raises(ValueError, match="ceiling"):
        target.gpu_hours_per_day(1000.0)  # a wait target sets no spend of its own
    found = operating_point(
        [waits(0.8, 2010, 300), waits(0.9, 2040, 110), waits(0.95, 2080, 60)],
        reactive_gpu_hours=2000,
        budget=target,
        window=(0, 2 * DAY),
        ceiling_gpu_hours_per_day=200.0,
    )
    assert found is not None and found.quantile == 0.9 and found.within_budget
    assert found.gpu_hours_per_day_budget == pytest.approx(200.0)  # the configured cap holds
    assert found.p95_wait_target_s == 120
    assert "cheapest with P95 wait <= 120 s" in found.reason
    missed = cheapest_within_wait([waits(0.8, 2010, 300), waits(0.9, 2040, 250)], p95_wait_s=120)
    assert missed is not None and not missed.within_budget and missed.candidate.quantile == 0.9
    budgets = Budgets(64, 200.0, 200.0, 3600)
    assert following_the_points(budgets, [found, point(budget=5)]) == budgets  # no spend set


@given(
    st.lists(st.tuples(st.floats(900, 1200), st.floats(0, 900)), min_size=1, max_size=6),
    st.floats(10, 600),
)
def test_a_wait_target_is_met_as_cheaply_as_the_candidates_allow(
    rows: list[tuple[float, float]], target: float
) -> None:
    candidates = [waits(0.6 + i * 0.05, g, p95) for i, (g, p95) in enumerate(rows)]
    choice = cheapest_within_wait(candidates, p95_wait_s=target)
    assert choice is not None
    met = [c for c in candidates if c.p95_wait_s <= target]
    assert choice.within_budget == bool(met)
    if met:
        assert choice.candidate in met
        assert all(choice.candidate.gpu_hours <= c.gpu_hours for c in met)
    else:
        assert all(choice.candidate.p95_wait_s <= c.p95_wait_s for c in candidates)


def test_the_json_form_round_trips_and_refuses_nonsense() -> None:
    p = point(0.9)
    assert OperatingPoint.from_dict(p.to_dict()) == p
    older = {
        k: v
        for k, v in p.to_dict().items()
        if k not in ("replayed", "p95_wait_target_s", "floor_gpus")
    }
    assert OperatingPoint.from_dict(older) == p  # published before those fields existed
    floored = dataclasses.replace(p, floor_gpus=16)
    assert OperatingPoint.from_dict(floored.to_dict()) == floored and floored.label == "P90+16"
    with pytest.raises(ValueError, match="out of range"):
        OperatingPoint.from_dict({**p.to_dict(), "floor_gpus": -8})
    with pytest.raises(ValueError, match="out of range"):
        OperatingPoint.from_dict({**p.to_dict(), "replayed": "guesses"})
    with pytest.raises(ValueError, match="out of range"):
        OperatingPoint.from_dict({**p.to_dict(), "quantile": 1.5})
    with pytest.raises(KeyError):
        OperatingPoint.from_dict({k: v for k, v in p.to_dict().items() if k != "window"})
