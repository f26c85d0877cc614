"""The cluster twin's mechanics on hand-made traces (times in seconds from T0).

Cases: reactive wait = batch + provisioning + image pull; a job fitting free GPUs starts at
once; a gang job waits for all its nodes; a warm placeholder is preempted after the grace
period (a cold one still costs the image pull); a CapacityBuffer is used with no grace and
refills within a batch, not at the next tick (but pre-pulls no image); empty nodes are
consolidated unless protected; placeholders are renewed at their TTL (counted unused) and
preempted ones count as used; GPU-hour metrics on a tiny case; the node-pool limit is never
exceeded; the twin reports its launches of the last day as the observer measures a lead, and
pods created as the observer and Prometheus count them; the oracle packs the coming jobs onto
free GPUs and prewarms the rest, so none of them waits.
"""

from __future__ import annotations

import numpy as np
import pytest

from forecaster.core.actions import AUTOSCALER_HELD
from forecaster.core.cluster import DemandForecast
from forecaster.core.jobs import JobTrace
from forecaster.core.planner import Mode
from forecaster.core.policy import Budgets, PoolPolicy, prewarm_window_seconds
from forecaster.simulation.metrics import measure
from forecaster.simulation.policies import (
    Burst,
    Oracle,
    PlannedPrewarm,
    Reactive,
    Static,
    continuation,
    submission_starts,
)
from forecaster.simulation.twin import (
    Decision,
    Twin,
    TwinConfig,
    TwinView,
    nodes_needed,
)
from tests.factories import policy as pool_policy

T0 = 1_800_000_000
CFG = TwinConfig()


def trace(*jobs: tuple[float, float, int]) -> JobTrace:
    rows = sorted(jobs)
    return JobTrace(
        submit=np.array([T0 + s for s, _, _ in rows], dtype=np.float64),
        duration=np.array([d for _, d, _ in rows], dtype=np.float64),
        gpus=np.array([g for _, _, g in rows], dtype=np.int64),
    )


def run(jobs: JobTrace, policy: object = None, *, end: float = 7200, **config: object):  # type: ignore[no-untyped-def]
    cfg = TwinConfig(**config) if config else CFG  # type: ignore[arg-type]
    return Twin(jobs, policy or Reactive(), cfg, start=T0, end=T0 + end).run()  # type: ignore[arg-type]


def waits(record) -> list[float]:  # type: ignore[no-untyped-def]
    return list(np.round(record.job_start - record.job_submit, 3))


def test_reactive_wait_is_batch_plus_provisioning_plus_pull() -> None:
    record = run(trace((100, 600, 8)))
    assert waits(record) == [CFG.batch_seconds + CFG.provision_seconds + CFG.image_pull_seconds]


def test_a_job_that_fits_free_gpus_starts_at_once() -> None:
    record = run(trace((0, 3000, 4), (1000, 600, 4)))
    assert waits(record) == [370.0, 0.0]


def test_gang_job_waits_for_all_its_nodes() -> None:
    record = run(trace((0, 600, 16)))
    assert waits(record) == [370.0]
    assert len(record.nodes) == 2


def test_warm_placeholder_is_preempted_after_the_grace_period() -> None:
    record = run(trace((1200, 600, 8)), Static(8))
    assert waits(record) == [CFG.preempt_grace_seconds]
    assert [p[3] for p in record.placeholders if p[0] < T0 + 1200] == [True]


def test_a_capacity_buffer_is_used_at_once_and_refills() -> None:
    """No preemption grace (nothing to evict), and the next chunk is launched within a batch,
    not at the daemon's next tick; but its pods are virtual, so no image is pre-pulled."""
    first = trace((1200, 3600, 8))
    assert waits(run(first, Static(8), conduct=AUTOSCALER_HELD)) == [CFG.image_pull_seconds]
    assert waits(run(first, Static(8))) == [CFG.preempt_grace_seconds]  # warm placeholder
    second = trace((1230, 3600, 8), (1320, 3600, 8))
    buffer = run(second, Static(8), conduct=AUTOSCALER_HELD, warm_image=False)
    pods = run(second, Static(8), warm_image=False)
    # buffer: the next chunk launches at 1230 + batch and is Ready at 1300, before the job
    assert waits(buffer) == [CFG.image_pull_seconds] * 2
    # pods: recreated at the tick of 1260, launched a batch later (real Karpenter sees a pending
    # placeholder within its batch, not at our next tick), Ready at 1330
    launched = 1260 + CFG.batch_seconds
    assert waits(pods)[1] == launched + CFG.provision_seconds - 1320 + CFG.image_pull_seconds


def test_cold_placeholder_still_costs_the_image_pull() -> None:
    record = run(trace((1200, 600, 8)), Static(8), warm_image=False)
    assert waits(record) == [CFG.image_pull_seconds]


class Toggle:
    """Protects the NodePool from ``protect_from`` on."""

    name = "toggle"

    def __init__(self, protect_from: float) -> None:
        self.protect_from = protect_from

    def decide(self, view: TwinView) -> Decision:
        return Decision(0, protect=view.now >= T0 + self.protect_from)


class Steps:
    """Prewarm ``gpus`` from each ``(second, gpus)`` step on."""

    name = "steps"

    def __init__(self, *steps: tuple[float, int]) -> None:
        self.steps = steps

    def decide(self, view: TwinView) -> Decision:
        return Decision(([g for at, g in self.steps if view.now >= T0 + at] or [0])[-1])


def test_a_scale_down_frees_the_warm_node_not_the_one_still_pulling() -> None:
    """As the actuator does: the placeholder on the pulled node goes first, so the job that
    arrives next lands warm instead of waiting for the second node's pull."""
    steps = Steps((0, 8), (1200, 16), (1380, 8))
    record = run(trace((1390, 600, 8)), steps)
    assert waits(record) == [0.0]
    cold = run(trace((1390, 600, 8)), steps, warm_image=False)  # nothing to pull: oldest goes
    assert [p[1] - T0 for p in cold.placeholders if p[0] == T0] == [1380]


class PlannedSteps:
    """The daemon's planner on the twin's snapshot, with a forecast of ``gpus`` from each
    ``(second, gpus)`` step on."""

    name = "planned-steps"

    def __init__(self, *steps: tuple[float, int]) -> None:
        self.steps = steps
        self.planner = PlannedPrewarm(
            pool_policy(allow_unlimited_nodepool=True),
            Budgets(
                max_total_prewarm_gpus=64,
                max_prewarm_gpu_hours_per_day=1e6,
                max_cost_per_hour=1e6,
                commitment_seconds=3600,
            ),
        )

    def decide(self, view: TwinView) -> Decision:
        gpus = ([g for at, g in self.steps if view.now >= T0 + at] or [0])[-1]
        now = int(view.now)
        level = DemandForecast("a", gpus, gpus, now - 60, "steps", 0.95)
        return self.planner.decide(view.snapshot(), level, mode=Mode.PREDICTIVE, now=now)[0]


def test_a_placeholder_whose_node_is_launching_is_kept_so_the_node_comes_up_warm() -> None:
    """The forecast rises for one tick: a node launches for the placeholder. Kept until the
    node is up, the placeholder pulls the image there, and the job that comes before the
    node is consolidated starts at once; deleted at the next tick, the node comes up empty and
    cold and the job waits for the pull."""
    record = run(trace((1600, 600, 8)), PlannedSteps((1200, 8), (1260, 0)))
    assert waits(record) == [0.0]
    ((created, ended, *_),) = record.placeholders
    assert (created - T0, ended - T0) == (1200, 1320)  # kept past 1260, until its node was up


def test_empty_nodes_are_consolidated_unless_protected() -> None:
    free = run(trace((0, 600, 8)), end=3600)
    ((_, removed, _),) = free.nodes
    # ready at 70 s, job ends at 970 s, removed after consolidate_after (checked every tick)
    assert T0 + 970 + 300 <= removed <= T0 + 970 + 300 + 60
    kept = run(trace((0, 600, 8)), Toggle(0), end=3600)
    assert kept.nodes[0][1] == T0 + 3600


def test_placeholders_are_renewed_at_their_ttl_and_counted_unused() -> None:
    record = run(trace(), Static(8), end=3 * 3600)
    ended_unused = [p for p in record.placeholders if p[1] < T0 + 3 * 3600 and not p[3]]
    assert len(ended_unused) == 2  # renewed at 1 h and 2 h
    metrics = measure(record, window=(T0, T0 + 3 * 3600), price_on_demand=4.0, price_spot=1.0)
    assert metrics.prewarm_gpu_hours_expired == pytest.approx(24.0, abs=0.2)
    assert metrics.prewarm_gpu_hours_used == 0
    assert metrics.gpu_hours == pytest.approx(8 * 3, abs=0.2)  # one node all along


def test_metrics_of_a_tiny_run() -> None:
    record = run(trace((0, 3600, 8)), end=2 * 3600)
    metrics = measure(record, window=(T0, T0 + 2 * 3600), price_on_demand=4.0, price_spot=1.5)
    # node launched at 10 s, job 380 s -> 3980 s, node removed ~300 s after
    assert metrics.jobs == 1 and metrics.p95_wait_s == pytest.approx(370)
    assert metrics.gpu_hours == pytest.approx(8 * (4280 - 10) / 3600, abs=8 * 60 / 3600)
    assert metrics.idle_gpu_hours == pytest.approx(metrics.gpu_hours - 8.0, abs=1e-6)
    assert metrics.cost == pytest.approx(metrics.gpu_hours * 4.0)


def test_nodepool_limit_is_never_exceeded() -> None:
    jobs = trace(*[(i * 10.0, 1800, 8) for i in range(10)])
    record = run(jobs, Static(32), nodepool_limit_gpus=48)
    assert record.capacity.max() <= 48 and record.breaches == 0
    # 6 nodes at most: jobs beyond them queue until the first ones finish
    assert (record.job_start - record.job_submit).max() > 1800


def test_burst_baseline_follows_recent_pod_creations() -> None:
    """burst: alpha x GPUs of pods created in the last 15 minutes (a batch submission is
    followed by more of the same), decided every 15 s; nothing once the burst is 15 min old."""
    jobs = trace(*[(1000 + i, 7200, 1) for i in range(16)])
    policy = Burst(window_seconds=430, gpus_per_node=8, max_gpus=64, alpha=1.0)
    seen: list[tuple[float, int]] = []

    class Watch:
        name = "burst"
        tick_seconds = policy.tick_seconds

        def decide(self, view: TwinView) -> Decision:
            decision = policy.decide(view)
            seen.append((view.now - T0, decision.target_gpus))
            return decision

    run(jobs, Watch(), end=4000)
    assert seen[1][0] - seen[0][0] == 15  # the decision interval
    assert all(gpus == 0 for t, gpus in seen if t < 1000)  # no arrivals, flat history
    assert max(gpus for t, gpus in seen if 1000 < t < 1000 + 900) >= 16
    assert all(gpus == 0 for t, gpus in seen if t > 1015 + 900)


def test_the_twin_measures_its_launches_like_the_observer() -> None:
    twin = Twin(trace((100, 600, 16)), Reactive(), CFG, start=T0, end=T0 + 3 * 86400)
    twin.begin()
    twin.advance_to(T0 + 50)
    assert twin.snapshot().measured_lead is None  # nothing launched yet
    twin.advance_to(T0 + 600)
    lead = twin.snapshot().measured_lead
    assert lead is not None and (lead.provisioning_seconds, lead.startup_seconds) == (60, 300)
    assert lead.launches == 2 and lead.total_seconds == 360
    twin.advance_to(T0 + 86400 + 600)
    assert twin.snapshot().measured_lead is None  # the launches left the last day


def test_the_twin_shows_pods_created_like_the_observer_and_prometheus() -> None:
    """Live counts by trailing window (``snapshot().arrivals``), and per-minute history where
    the value at t counts the pods created in (t - 60, t] - as ``ARRIVALS_QUERY`` does."""
    twin = Twin(
        trace((130, 600, 4), (150, 600, 2), (400, 600, 8)), Reactive(), CFG, start=T0, end=T0 + 7200
    )
    twin.begin()
    twin.advance_to(T0 + 420)
    arrivals = twin.snapshot().arrivals
    assert arrivals is not None and arrivals.gpus == (8, 14, 14, 14)
    twin.advance_to(T0 + 900)
    first, per_minute = twin.arrival_history(since=T0)
    assert first == T0 and per_minute.sum() == 14
    assert (
        per_minute[3] == 6 and per_minute[7] == 8
    )  # 130 and 150 s in (120, 180]; 400 in (360, 420]


def test_nodes_needed_packs_first_fit_and_whole_nodes_for_big_jobs() -> None:
    # 4 free on one node, 8 on an empty one: a 4-GPU job takes the 4, a 16-GPU job needs the
    # empty node plus one new one, and two 3-GPU jobs share one new node
    assert nodes_needed([4, 16, 3, 3], free=[4, 8], gpus_per_node=8) == 2
    assert nodes_needed([8], free=[4, 4], gpus_per_node=8) == 1  # stranded GPUs host no 8-GPU job
    assert nodes_needed([], free=[], gpus_per_node=8) == 0


def test_the_oracle_prewarms_for_the_jobs_about_to_arrive() -> None:
    """Knowing the jobs, the oracle has a warm node for each one beyond the free GPUs: none
    of them waits the lead time."""
    jobs = trace(*[(1800 + 600 * i, 1200, 8) for i in range(6)], (3000, 1200, 16))
    planner = PlannedPrewarm(
        PoolPolicy(
            pool="gpu",
            gpus_per_node=8,
            placeholder_size_gpus=8,
            max_prewarm_gpus=64,
            price_per_gpu_hour=1.0,
            stale_after_seconds=900,
            hold_seconds=900,
            allow_unlimited_nodepool=True,
        ),
        Budgets(
            max_total_prewarm_gpus=64,
            max_prewarm_gpu_hours_per_day=1e6,
            max_cost_per_hour=1e6,
            commitment_seconds=3600,
        ),
    )
    oracle = Oracle(planner, prewarm_window_seconds(360, 60), jobs)
    record = run(jobs, oracle, end=7200)
    assert max(waits(record)) <= CFG.preempt_grace_seconds
    reactive = run(jobs, end=7200)
    assert max(waits(reactive)) >= 360  # reactively, jobs needing a new node wait the lead


def test_continuation_knows_a_submission_only_once_its_first_pod_exists() -> None:
    """The bound of a model reading bursts: nothing is prewarmed for a submission's first job
    (the oracle would), the rest of the submission is (jobs at most the gap apart)."""
    jobs = trace((1800, 3000, 8), (2000, 3000, 8), (4500, 3000, 8))
    policy = pool_policy(
        "gpu", stale_after_seconds=900, hold_seconds=0, allow_unlimited_nodepool=True
    )
    budgets = Budgets(
        max_total_prewarm_gpus=64,
        max_prewarm_gpu_hours_per_day=1e6,
        max_cost_per_hour=1e6,
        commitment_seconds=3600,
    )
    window = prewarm_window_seconds(360, 60)
    for bound, first_job_prewarmed in (
        (continuation(PlannedPrewarm(policy, budgets), window, jobs, gap_seconds=300), False),
        (Oracle(PlannedPrewarm(policy, budgets), window, jobs), True),
    ):
        seen = targets(jobs, bound, end=6000)
        before_first = [gpus for t, gpus in seen if 1800 - window < t < 1800]
        assert any(before_first) == first_job_prewarmed, bound.name
        assert any(gpus for t, gpus in seen if 1800 <= t < 2000)  # the second job: known
        before_third = [gpus for t, gpus in seen if 4500 - window < t < 4500]
        assert any(before_third) == first_job_prewarmed, bound.name  # a new submission


def targets(jobs: JobTrace, policy: Oracle, *, end: float) -> list[tuple[float, int]]:
    """``policy``'s prewarm target at each of its decisions (seconds from T0, GPUs)."""
    seen: list[tuple[float, int]] = []

    class Watch:
        name = policy.name

        def decide(self, view: TwinView) -> Decision:
            decision = policy.decide(view)
            seen.append((view.now - T0, decision.target_gpus))
            return decision

    run(jobs, Watch(), end=end)
    return seen


def test_submissions_are_runs_of_jobs_at_most_the_gap_apart() -> None:
    jobs = trace((0, 60, 1), (50, 60, 1), (100, 60, 1), (500, 60, 1))
    assert submission_starts(jobs, gap_seconds=60).tolist() == [T0, T0, T0, T0 + 500]
    assert submission_starts(jobs, gap_seconds=10).tolist() == [T0, T0 + 50, T0 + 100, T0 + 500]


class Recorder:
    """Decides nothing; records when it was asked."""

    name = "recorder"

    def __init__(self) -> None:
        self.asked: list[float] = []

    def decide(self, view: TwinView) -> Decision:
        self.asked.append(view.now - T0)
        return Decision(0)


def test_a_new_pod_wakes_a_decision_as_the_pod_watch_does() -> None:
    """With ``wake_seconds`` (the daemon's pod watch) each arrival is decided on at once, or
    once ``wake_seconds`` have passed since the last decision; the regular ticks stay."""
    arrivals = trace((100, 60, 8), (100.5, 60, 8), (101, 60, 8), (130, 60, 8), (200, 60, 1))
    ticking, woken = Recorder(), Recorder()
    run(arrivals, ticking, end=240, tick_seconds=60)
    run(arrivals, woken, end=240, tick_seconds=60, wake_seconds=2)
    assert ticking.asked == [0, 60, 120, 180]
    assert woken.asked == [0, 60, 100, 102, 120, 130, 180, 200]


def test_kueue_notice_shows_each_workload_before_its_pods() -> None:
    """With ``kueue_notice_seconds`` the daemon's ``kueue`` source reads, as workloads holding
    quota, the GPUs of the jobs whose pods come within the notice - never later ones, never
    those of pods that exist already, never beyond the replay's end."""
    jobs = trace((300, 600, 8), (500, 600, 16), (2000, 600, 4), (7300, 600, 2))
    twin = Twin(jobs, Reactive(), TwinConfig(kueue_notice_seconds=360), start=T0, end=T0 + 7200)
    twin.begin()
    seen = []
    for t in (100, 200, 350, 1700, 6900):
        twin.advance_to(T0 + t)
        snapshot = twin.snapshot()
        assert snapshot.kueue is None  # notice only: no quota binds
        assert {i.source for i in snapshot.announced} <= {"kueue"}
        assert all(i.in_history for i in snapshot.announced)
        seen.append(sum(i.gpus for i in snapshot.announced))
    assert seen == [8, 24, 16, 4, 0]
    without = Twin(jobs, Reactive(), CFG, start=T0, end=T0 + 600)
    assert without.snapshot().kueue is None and without.snapshot().announced == ()


@pytest.mark.parametrize(
    "config", [{"kueue_notice_seconds": -1}, {"kueue_notice_seconds": 60, "kueue_quota_gpus": 8}]
)
def test_kueue_notice_refuses_what_it_does_not_model(config: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=r"(?i)kueue"):
        TwinConfig(**config)  # type: ignore[arg-type]
