"""Replay's ``burst-live:ALPHA``: the burst rule as a ``policy: burst`` pool runs it - the
daemon's reconcile loop with the rule, refitted weekly on past demand only, in the arrivals
model's place - so what the verdict recommends for a burst pool can be replayed as it will run.

Cases: the retrains fit the rule at the asked share (not the arrivals model) on data before
each fit; the loop plans from it: a larger share prewarms more (at 0.25 the rule asks for no
more than the spare capacity already warm - reactive's GPU-hours - at 4 it prewarms).
"""

from __future__ import annotations

import dataclasses

from forecaster.app.replay_policies import replay_policy
from forecaster.durations import DAY
from forecaster.forecasting.burst import BurstRule
from forecaster.simulation.replay import Predictive, RetrainSchedule, replay
from tests.factories import setup, synthetic


def test_burst_live_runs_the_daemons_loop_with_the_rule_refitted_weekly() -> None:
    jobs = synthetic(3, seed=7)
    s = dataclasses.replace(
        setup(3), retrain=RetrainSchedule(min_train_seconds=DAY // 2, every_seconds=DAY // 2)
    )
    spent = {}
    for alpha in (0.25, 4.0):
        policy = replay_policy(f"burst-live:{alpha:g}", s, jobs=jobs)
        assert isinstance(policy, Predictive) and policy.name == f"burst-live:{alpha:g}"
        spent[alpha] = replay(jobs, policy, setup=s).metrics.gpu_hours
        current = policy.models.current
        assert current is not None and isinstance(current.arrivals, BurstRule)
        assert current.arrivals.alpha == alpha and current.arrivals.floors_
        assert policy.models.fits and all(end < fit for fit, end in policy.models.fits)
    reactive = replay(jobs, replay_policy("reactive", s, jobs=jobs), setup=s).metrics.gpu_hours
    assert reactive <= spent[0.25] < spent[4.0]
