"""The frontier's verdict: forecaster or static headroom at each budget, by the stated rule.

Cases: forecaster is recommended when clearly better on one figure and not worse on the others
(with the configuration lines that run its point); static headroom when forecaster is worse on
one figure - the smallest K no worse on all three for no more GPU-hours - or merely not better
enough, or when no point fits the budget (the largest K within it on the tuning window);
a point outside the static sweep is not judged against an extrapolation; both rows are said
either way; the frontier's JSON and its lines carry the verdict.
"""

from __future__ import annotations

from typing import Any

import pytest

from forecaster.simulation.verdict import at_gpu_hours, in_sentences, ratio, verdict


def row(gpu_hours: float, share: float, mean: float, p95: float, **knobs: float) -> dict[str, Any]:
    return {
        "gpu_hours": gpu_hours,
        "share_waiting_over_5min": share,
        "mean_wait_s": mean,
        "p95_wait_s": p95,
        **knobs,
    }


STATIC = [
    row(100, 0.20, 100, 400, knob=0),
    row(104, 0.15, 80, 360, knob=8),
    row(108, 0.10, 60, 320, knob=16),
    row(116, 0.05, 40, 280, knob=32),
]


def document(chosen: dict[str, Any] | None, budget: int = 5) -> dict[str, Any]:
    return {
        "static": STATIC,
        "chosen": {} if chosen is None else {str(budget): chosen},
        "tune": {"reactive": row(100, 0.2, 100, 400), "static": STATIC},
    }


def test_forecaster_when_clearly_better_on_one_figure_and_no_worse_on_the_others() -> None:
    # static at 104 GPU-hours: 15 %, 80 s, 360 s
    chosen = row(104, 0.12, 82, 365, knob=0.8, floor_gpus=16)
    v = verdict(document(chosen), 5)
    assert v.recommend == "forecaster"
    assert v.ratios["share_waiting_over_5min"] == pytest.approx(0.8)
    assert v.static_same_cost is not None and v.static_same_cost["gpus"] == pytest.approx(8)
    said = "\n".join(in_sentences([v], scope="pool itp, judged days 20-28", pool="itp"))
    assert "forecaster's choice (P80+16) has 12.0% of jobs waiting > 5 min, mean 82 s" in said
    assert "static headroom of the same cost (about 8 GPUs) has 15.0%" in said
    assert "recommend forecaster" in said
    assert "target_quantile: 0.8" in said and "name: itp, floor_gpus: 16" in said


def test_static_when_forecaster_is_worse_on_one_figure() -> None:
    # better on the share (0.91x), but 1.27x static's mean wait
    chosen = row(110, 0.08, 70, 300, knob=0.9, floor_gpus=0)
    v = verdict(document(chosen), 5)
    assert v.recommend == "static"
    assert "worse than static on mean wait" in v.reason
    # no K is no worse on all three (K=16 waits over 5 min more: 10 % > 8 %): the most K
    # within +5 % on the tuning window
    assert v.static_gpus == 8


def test_static_when_no_figure_is_better_enough() -> None:
    chosen = row(104, 0.145, 78, 355, knob=0.9, floor_gpus=0)  # 0.97x, 0.98x, 0.99x
    v = verdict(document(chosen), 5)
    assert v.recommend == "static"
    assert "no figure 0.9x of static's or better" in v.reason
    # no swept K is no worse on all three for <= 104 GPU-hours (K=8: 15 % > 14.5 %)
    assert v.static_gpus == 8  # so the most static headroom within +5 % on the tuning window
    said = "\n".join(in_sentences([v], scope="s", pool=None))
    assert "recommend static headroom of 8 GPUs" in said
    assert "forecaster's choice (P90) has" in said  # both rows said either way


def test_the_least_static_headroom_no_worse_for_no_more_gpu_hours() -> None:
    chosen = row(112, 0.11, 66, 330, knob=0.95, floor_gpus=8)  # static at 112: 7.5 %, 50 s
    v = verdict(document(chosen, 10), 10)
    assert v.recommend == "static"
    assert v.static_gpus == 16  # 10 %, 60 s, 320 s at 108 GPU-hours: no worse, cheaper
    assert "the least static headroom no worse on all three" in v.reason


def test_static_within_the_budget_when_no_point_fits_it() -> None:
    v = verdict(document(None), 10)
    assert v.recommend == "static" and v.chosen is None
    assert v.static_gpus == 16  # 108 <= 110 on the tuning window; 116 is not
    assert "no forecaster point fits the budget" in v.reason


def test_a_point_outside_the_sweep_is_not_judged_by_extrapolation() -> None:
    assert at_gpu_hours(STATIC, 130) is None
    v = verdict(document(row(130, 0.0, 1, 10, knob=0.98, floor_gpus=64)), 5)
    assert v.recommend == "static"
    assert "does not reach the chosen point's GPU-hours" in v.reason


def test_a_one_k_sweep_judges_a_point_at_its_own_gpu_hours() -> None:
    assert at_gpu_hours(STATIC[1:2], 104) == {
        "share_waiting_over_5min": 0.15,
        "mean_wait_s": 80,
        "p95_wait_s": 360,
        "gpus": 8,
    }
    assert at_gpu_hours(STATIC[1:2], 105) is None


def test_ratios_of_zero() -> None:
    assert ratio(0, 0) == 1.0
    assert ratio(1, 0) == float("inf")
    assert ratio(1, 2) == 0.5


def with_burst(
    chosen: dict[str, Any] | None, burst: dict[str, Any], budget: int = 5, *, live: bool = True
) -> dict[str, Any]:
    """A frontier document whose burst point was replayed in the daemon's loop too (``live``:
    the same figures) or not."""
    found = {**document(chosen, budget), "chosen_burst": {str(budget): burst}}
    return found | ({"chosen_burst_live": {str(budget): burst}} if live else {})


def test_the_burst_rule_is_recommended_where_it_qualifies_and_the_forecast_does_not() -> None:
    chosen = row(104, 0.145, 78, 355, knob=0.9, floor_gpus=0)  # not better enough
    burst = row(104, 0.10, 76, 360, knob=2.0)  # 0.67x on the share, no worse elsewhere
    v = verdict(with_burst(chosen, burst), 5)
    assert (v.recommend, v.family) == ("forecaster", "burst")
    assert [o.family for o in v.others] == ["predictive"]
    said = "\n".join(in_sentences([v], scope="s", pool="itp"))
    assert "forecaster's choice (P90) has 14.5%" in said  # every family's row is said
    assert "the burst rule's choice (alpha 2, in the daemon's loop) has 10.0%" in said
    assert "recommend forecaster with the burst rule" in said
    assert "pools: [{name: itp, policy: burst, burst_alpha: 2}]" in said
    assert "--policy burst:2,burst-live:2 runs it as the pool will" in said  # how to check it
    assert v.to_dict()["family"] == "burst" and v.to_dict()["others"][0]["family"] == "predictive"


def test_where_both_families_qualify_the_lower_geometric_mean_of_ratios_wins() -> None:
    chosen = row(104, 0.12, 78, 355, knob=0.8, floor_gpus=16)  # 0.80x, 0.98x, 0.99x
    burst = row(104, 0.13, 70, 350, knob=1.0)  # 0.87x, 0.88x, 0.97x: lower product
    v = verdict(with_burst(chosen, burst), 5)
    assert (v.recommend, v.family) == ("forecaster", "burst")
    better = row(104, 0.09, 72, 340, knob=0.8, floor_gpus=16)  # 0.60x, 0.90x, 0.94x
    assert verdict(with_burst(better, burst), 5).family == "predictive"


def test_where_no_family_qualifies_static_is_recommended_with_every_row_said() -> None:
    chosen = row(110, 0.08, 70, 300, knob=0.9, floor_gpus=0)  # worse on the mean
    burst = row(104, 0.15, 84, 360, knob=0.5)  # no better anywhere: not replayed in the loop
    v = verdict(with_burst(chosen, burst, live=False), 5)
    assert (v.recommend, v.family, v.static_gpus) == ("static", "predictive", 8)
    said = "\n".join(in_sentences([v], scope="s", pool=None))
    assert "the burst rule's choice (alpha 0.5;" in said and "recommend static headroom" in said


def test_a_burst_point_measured_outside_the_daemons_loop_is_said_not_recommended() -> None:
    """The frontier's burst curve is replay's rule; the daemon's loop running the rule
    (``burst-live``) did far worse on cluster04, so its figures recommend nothing."""
    chosen = row(104, 0.145, 78, 355, knob=0.9, floor_gpus=0)  # not better enough
    burst = row(104, 0.10, 76, 360, knob=2.0)  # would qualify: 0.67x on the share
    v = verdict(with_burst(chosen, burst, live=False), 5)
    assert (v.recommend, v.family) == ("static", "predictive")
    (other,) = v.others
    assert other.family == "burst" and other.recommend == "forecaster" and not other.live
    said = "\n".join(in_sentences([v], scope="s", pool="itp"))
    assert "alpha 2; replay's rule outside the daemon's loop: said, not recommended)" in said
    assert "policy: burst" not in said and "recommend static headroom" in said


def test_a_burst_point_is_judged_on_its_figures_in_the_daemons_loop() -> None:
    """Where the frontier replayed the rule's choice in the loop, those figures are judged:
    the rule's would qualify, the loop's (hand-offs) do not."""
    chosen = row(110, 0.08, 70, 300, knob=0.9, floor_gpus=0)  # worse on the mean
    rule = row(104, 0.10, 76, 360, knob=2.0)  # 0.67x on the share, no worse elsewhere
    found = with_burst(chosen, rule, live=False) | {
        "chosen_burst_live": {"5": row(102, 0.19, 95, 390, knob=2.0)}  # as reactive, barely
    }
    v = verdict(found, 5)
    assert v.recommend == "static"
    (burst,) = [o for o in (v, *v.others) if o.family == "burst"]
    assert burst.live and burst.chosen is not None and burst.chosen["mean_wait_s"] == 95
    said = "\n".join(in_sentences([v], scope="s", pool="itp"))
    assert "alpha 2, in the daemon's loop) has 19.0%" in said and "policy: burst" not in said
