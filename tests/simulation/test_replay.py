"""Replay policies end to end on small synthetic traces, and the ``replay`` command.

Cases: the predictive policy never sees future data (changing the trace after day 4 changes
none of its decisions before day 4; every retrain's data ends before the retrain); planner-driven
policies never breach their caps (tight caps, many jobs); a replay's first minute, before the
twin has recorded any demand, is not logged as a data error; a demand series becomes 1-GPU pods
that reproduce it; a window of jobs runs the same GPUs within it and nothing outside; bad job
files name the line; ``forecaster replay`` writes the JSON keys scripts rely on and an HTML
report with its charts.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from html import escape as html_escape
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from forecaster.app import build
from forecaster.app.build_replay import replay_setup_from_settings
from forecaster.app.replay_policies import replay_policy
from forecaster.cli import build_parser, main
from forecaster.cli.config_paths import BUNDLED_CONFIG
from forecaster.cli.replay import setup_from
from forecaster.core.error_budget import SloPolicy
from forecaster.core.jobs import JobTrace, jobs_from_series
from forecaster.core.policy import MIN_WAKE_SECONDS
from forecaster.durations import DAY
from forecaster.errors import SourceError
from forecaster.forecasting.features import forward_filled
from forecaster.settings import load_settings
from forecaster.simulation.policies import Static
from forecaster.simulation.replay import (
    Predictive,
    replay,
)
from forecaster.simulation.twin import MODELLED_SOURCES, Decision, TwinView
from forecaster.sources.files import read_job_trace
from tests.factories import DAILY, bursts_after_a_trickle, jobs_csv, predictive, setup, synthetic
from tests.factories import REPLAY_T0 as T0


class Recording:
    """Wraps a policy and records every decision with its time."""

    def __init__(self, inner: Predictive) -> None:
        self.inner = inner
        self.name = inner.name
        self.decisions: list[tuple[float, Decision]] = []

    def decide(self, view: TwinView) -> Decision:
        decision = self.inner.decide(view)
        self.decisions.append((view.now, decision))
        return decision


def test_predictive_never_sees_future_data() -> None:
    base = synthetic(5, seed=1)
    cut = T0 + 4 * DAY
    other = synthetic(5, seed=2)
    keep, new = base.submit < cut, other.submit >= cut
    changed = JobTrace(
        submit=np.concatenate((base.submit[keep], other.submit[new])),
        duration=np.concatenate((base.duration[keep], other.duration[new] * 3)),
        gpus=np.concatenate((base.gpus[keep], other.gpus[new])),
    )
    s = setup(5)
    a, b = Recording(predictive(s)), Recording(predictive(s))
    replay(base, a, setup=s)
    replay(changed, b, setup=s)
    before = [(t, d) for t, d in a.decisions if t < cut]
    assert before == [(t, d) for t, d in b.decisions if t < cut]
    assert any(d.target_gpus > 0 for _, d in before)
    assert [(t, d) for t, d in a.decisions if t >= cut] != [
        (t, d) for t, d in b.decisions if t >= cut
    ]
    assert a.inner.models.fits and all(end < fitted for fitted, end in a.inner.models.fits)


def test_the_first_minute_before_any_demand_is_recorded_is_no_data_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    jobs = synthetic(1, seed=3)
    s = setup(1)
    with caplog.at_level(logging.WARNING):
        replay(jobs, predictive(s), setup=s)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


@pytest.mark.parametrize("name", ["predictive", "oracle"])
def test_planned_policies_never_breach_their_caps(name: str) -> None:
    jobs = synthetic(3, seed=3)
    s = setup(3, cap=16)
    if name == "predictive":
        s = dataclasses.replace(s, retrain=DAILY, slo=SloPolicy(fast_burn=1e9, slow_burn=1e9))
    policy = replay_policy(name, s, jobs=jobs)
    result = replay(jobs, policy, setup=s)
    assert result.metrics.cap_breaches == 0
    assert result.record.prewarm.max() <= 16
    assert result.record.prewarm.max() > 0


@pytest.mark.parametrize(
    "tight",
    [
        {"max_total_prewarm_gpus": 8},
        {"max_cost_per_hour": 8 * 4.1},
        {"max_prewarm_gpu_hours_per_day": 8 * 24.0},
    ],
    ids=["total GPUs", "cost an hour", "GPU-hours a day"],
)
def test_the_twin_counts_a_breach_of_every_cap(tight: dict[str, float]) -> None:
    """Each shared cap on its own, the others loose: static headroom (no planner) of 16 GPUs
    breaches it, the planned oracle under it does not."""
    jobs = synthetic(2, seed=3)
    loose = setup(2, cap=64)
    s = dataclasses.replace(loose, budgets=dataclasses.replace(loose.budgets, **tight))
    assert replay(jobs, Static(16), setup=s).metrics.cap_breaches > 0
    assert replay(jobs, Static(16), setup=loose).metrics.cap_breaches == 0
    oracle = replay(jobs, replay_policy("oracle", s, jobs=jobs), setup=s)
    assert oracle.metrics.cap_breaches == 0 and oracle.record.prewarm.max() > 0


def test_series_become_pods_that_reproduce_it() -> None:
    values = np.array([3.0, 5, 5, np.nan, 2, 0, 4])
    jobs = jobs_from_series(T0, 60, values=values)
    rebuilt = jobs.demand(start=T0, end=T0 + 60 * values.size)
    expected = np.array([3.0, 5, 5, 5, 2, 0, 4])
    np.testing.assert_array_equal(rebuilt, expected)
    assert set(jobs.gpus.tolist()) == {1}


@examples(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(0, 40).map(float), st.just(float("nan"))), min_size=1, max_size=80
    ),
    st.integers(1, 8),
)
def test_series_become_pods_of_up_to_a_node_that_track_it(
    values: list[float], max_pod_gpus: int
) -> None:
    """Rises become pods of at most ``max_pod_gpus``; the level they make never falls below
    the series and stays above it by less than one such pod (a fall smaller than the oldest pod
    leaves it running)."""
    series = np.asarray(values)
    jobs = jobs_from_series(T0, 60, values=series, max_pod_gpus=max_pod_gpus)
    rebuilt = jobs.demand(start=T0, end=T0 + 60 * series.size)
    held = forward_filled(series, max_steps=series.size)  # gaps hold the last level
    known = ~np.isnan(held)
    assert np.all(jobs.gpus <= max_pod_gpus) and np.all(jobs.gpus >= 1)
    assert np.all(rebuilt[known] >= held[known])
    assert np.all(rebuilt[known] - held[known] < max_pod_gpus)
    if max_pod_gpus == 1:
        np.testing.assert_array_equal(rebuilt[known], held[known])


@examples(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 100), st.integers(1, 60), st.integers(1, 16)), max_size=30),
    st.integers(0, 60),
    st.integers(1, 60),
)
def test_a_window_of_jobs_runs_the_same_gpus_in_it_and_nothing_outside(
    jobs: list[tuple[int, int, int]], first: int, steps: int
) -> None:
    """``seen_between`` (a pod history's window): inside it, the same GPUs at every step;
    nothing submitted before it or running after it."""
    rows = sorted(jobs)
    trace = JobTrace(
        submit=np.array([T0 + 60 * s for s, _, _ in rows], dtype=np.float64),
        duration=np.array([60 * d for _, d, _ in rows], dtype=np.float64),
        gpus=np.array([g for _, _, g in rows], dtype=np.int64),
    )
    start, end = T0 + 60 * first, T0 + 60 * (first + steps)
    seen = trace.seen_between(start, end)
    np.testing.assert_array_equal(
        seen.demand(start=start, end=end), trace.demand(start=start, end=end)
    )
    assert np.all(seen.submit >= start) and np.all(seen.submit + seen.duration <= end)
    assert np.all(seen.duration > 0)


def test_bad_job_files_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submission_time,duration,num_gpu\na,10,100,8\nb,20,-5,8\n")
    with pytest.raises(SourceError, match=r"jobs.csv:3: duration must be >= 0"):
        read_job_trace(path, epoch=0)
    path.write_text("job_id,when,duration,num_gpu\n")
    with pytest.raises(
        SourceError, match=r"jobs.csv:1: job trace header lacks \['submission_time'\]"
    ):
        read_job_trace(path, epoch=0)


def test_replay_command_writes_json_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = synthetic(3, seed=4)
    path, epoch = jobs_csv(tmp_path / "jobs.csv", jobs)
    code = main(
        [
            "replay",
            "--jobs",
            str(path),
            "--epoch",
            epoch,
            "--policy",
            "reactive,static,oracle",
            "--sweep",
            "0,16,64",  # 64 is also the static policy's K: run and listed once
            "--warmup-days",
            "1",
            "--end-day",
            "3",
            "--json",
            str(tmp_path / "r.json"),
            "--report",
            str(tmp_path / "r.html"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    document = json.loads((tmp_path / "r.json").read_text())
    assert set(document) == {"reactive", "static:64", "oracle", "static:0", "static:16"}
    rows = [
        line.split()[0]
        for line in out.splitlines()
        if line.strip().startswith("static:") and "GPU-hours" not in line
    ]
    assert sorted(rows) == ["static:0", "static:16", "static:64"], out
    for figures in document.values():
        assert {
            "p50_wait_s",
            "p95_wait_s",
            "p99_wait_s",
            "mean_wait_s",
            "gpu_hours",
            "idle_gpu_hours",
            "prewarm_gpu_hours_used",
            "prewarm_gpu_hours_expired",
            "cost",
            "cap_breaches",
            "handoffs",
        } <= set(figures)
        assert figures["cap_breaches"] == 0
    assert document["reactive"]["p95_wait_s"] > document["oracle"]["p95_wait_s"]
    assert re.search(r"reactive: GPU-hours [\d.]+ x oracle", out)
    said = [line for line in out.splitlines() if line.startswith(("reactive: ", "oracle: "))]
    said = [line for line in said if "GPU-hours (" in line]  # the sentences, not the x oracle
    assert len(said) == 2 and all("against reactive scaling" in line for line in said)
    html = (tmp_path / "r.html").read_text()
    assert html.count("data:image/png;base64,") == 3 and "<table>" in html
    # the report says in words what the terminal says, before any chart
    assert html.index("Against static headroom at the same GPU-hours") < html.index("<img")
    for line in said:
        assert html_escape(line) in html


def test_with_a_kueue_quota_no_prewarm_goes_beyond_what_it_admits() -> None:
    """Kueue in the twin: jobs beyond the quota wait as workloads (no pods, no nodes), and the
    planned prewarm never exceeds the room the quota leaves."""
    jobs = synthetic(2, seed=4)
    s = setup(2)
    s = dataclasses.replace(s, twin=dataclasses.replace(s.twin, kueue_quota_gpus=40))
    oracle = replay_policy("oracle", s, jobs=jobs)
    seen: list[tuple[int, int]] = []

    class Watch:
        name = "oracle"

        def decide(self, view: TwinView) -> Decision:
            room = view.snapshot().kueue
            assert room is not None
            decision = oracle.decide(view)
            seen.append((decision.target_gpus, room.admissible_gpus))
            return decision

    result = replay(jobs, Watch(), setup=s)  # type: ignore[arg-type]
    assert all(prewarm <= room for prewarm, room in seen)
    assert any(prewarm > 0 for prewarm, _ in seen)
    assert any(room < 8 for _, room in seen)  # the quota did bind
    assert result.record.demand.max() <= 40  # only admitted work has pods
    unlimited = replay(jobs, replay_policy("oracle", setup(2), jobs=jobs), setup=setup(2))
    assert result.record.prewarm.sum() < unlimited.record.prewarm.sum()


def test_replay_error_budget_follows_the_plan_like_the_daemon() -> None:
    s = dataclasses.replace(setup(2, cap=16), plan_quantile=0.8)
    policy = replay_policy("predictive", s, jobs=synthetic(1, seed=7))
    assert isinstance(policy, Predictive)
    assert policy.reconciler.slo.target_exceedance == pytest.approx(0.2)
    assert policy.reconciler.slo.max_waste_gpu_hours_per_day == 16 * 24.0


def test_replay_reports_how_waiting_moves_with_image_pull_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = synthetic(2, seed=8)
    path, epoch = jobs_csv(tmp_path / "jobs.csv", jobs)
    args = ["replay", "--jobs", str(path), "--epoch", epoch, "--policy", "static:16"]
    args += ["--warmup-days", "1", "--end-day", "2", "--image-pull-sweep", "0,300"]
    assert main([*args, "--json", str(tmp_path / "r.json")]) == 0
    by_pull = json.loads((tmp_path / "r.json").read_text())["image_pull_sweep"]
    assert set(by_pull) == {"0", "300"} and set(by_pull["0"]) == {"reactive", "static:16"}
    for policy in ("reactive", "static:16"):  # a shorter lead never makes anyone wait longer
        assert by_pull["0"][policy]["mean_wait_s"] < by_pull["300"][policy]["mean_wait_s"]
    assert re.search(r"300 s\s+reactive\s+\+0\.00%", capsys.readouterr().out)
    assert main([*args[:-1], "0,slow"]) != 0
    assert "--image-pull-sweep: expected seconds" in capsys.readouterr().err


def test_replay_with_a_config_runs_the_configured_daemons_decision_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`replay --config`: the predictive policy is the reconcile loop the daemon would build from
    the same file - same pool runtime (policy, horizon, quantile, lead), budgets and SLO."""
    settings = load_settings(BUNDLED_CONFIG)
    s = replay_setup_from_settings(
        settings, epoch=T0, start_day=0, warmup_days=1, end_day=2, model="quantreg-raw"
    )
    policy = replay_policy("predictive", s, jobs=synthetic(2, seed=9))
    daemon = build.build_reconciler(settings)
    assert isinstance(policy, Predictive)
    assert policy.reconciler.pools == [p for p in daemon.pools if p.policy.pool == "itp"]
    assert (policy.reconciler.budgets, policy.reconciler.slo) == (daemon.budgets, daemon.slo)
    assert s.twin.tick_seconds == settings.reconcile_every_seconds
    assert settings.watch_pods and s.twin.wake_seconds == MIN_WAKE_SECONDS  # the pod watch
    unwatched = settings.model_copy(update={"watch_pods": False})
    assert (
        replay_setup_from_settings(
            unwatched, epoch=T0, start_day=0, warmup_days=1, end_day=2, model="quantreg-raw"
        ).twin.wake_seconds
        is None
    )
    # a candidate point (the operating point's, the frontier's) runs in the configured pool too
    at = replay_policy("predictive", s.at_point(0.8, 16), jobs=synthetic(2, seed=9))
    assert isinstance(at, Predictive)
    (pool,) = at.reconciler.pools
    assert (pool.target_quantile, pool.policy.floor_gpus) == (0.8, 16)
    jobs = synthetic(2, seed=9)
    path, epoch = jobs_csv(tmp_path / "jobs.csv", jobs)
    args = ["replay", "--config", str(BUNDLED_CONFIG), "--jobs", str(path), "--epoch", epoch]
    args += ["--policy", "reactive,static:16", "--warmup-days", "1", "--end-day", "2"]
    assert main(args) == 0
    assert s.twin.notice_sources == settings.notice.sources  # its notice as configured
    assert s.twin.notice_grace_seconds == settings.notice.grace_seconds
    said = capsys.readouterr().out
    unmodelled = [n for n in settings.notice.sources if n not in MODELLED_SOURCES]
    assert (
        unmodelled
        and (
            f"notice sources the replay does not model (their work is not announced here):"
            f" {', '.join(unmodelled)}"
        )
        in said
    )
    assert main([*args, "--image-pull", "30", "--quantile", "0.9", "--backend", "capacitybuffer"])
    assert "--image-pull, --quantile, --backend: with --config the configured pool sets these" in (
        capsys.readouterr().err
    )
    # the simulated cluster's Kueue is the command line's, with a config too
    parsed = build_parser().parse_args([*args, "--kueue-notice", "5m"])
    with_kueue = setup_from(parsed, T0, settings=settings)
    assert with_kueue.twin.kueue_notice_seconds == 300
    assert dataclasses.replace(with_kueue.twin, kueue_notice_seconds=0) == s.twin


def test_predictive_plans_from_the_arrivals_model_its_retrain_fitted() -> None:
    s = setup(5)
    policy = predictive(s)
    replay(synthetic(5, seed=1), policy, setup=s)
    assert policy.models.current is not None and policy.models.current.arrivals is not None
    last = policy.reconciler.last
    assert last is not None
    demand = last.pools[s.twin.pool].demand
    assert demand is not None and demand.model == "arrivals" and demand.peak


def test_the_daemon_prewarms_for_workloads_kueue_holds_and_is_judged_on_its_plan() -> None:
    """Notice of queued work through the daemon's own path. Every 30 minutes for 8 hours a
    batch of twelve 8-GPU jobs lands, unlike anything in the day of history trained on. Without
    notice the bursts wait for new nodes, and the forecast's misses burn the error budget until
    the pool is handed to reactive scaling. With the workloads visible 10 minutes before their
    pods (``kueue_notice_seconds``) the planner counts them as demand, the placeholders are warm
    when the pods come, and the error budget judges what the plan planned for - so the covered
    bursts are no misses and the pool is never handed off."""
    jobs, in_burst = bursts_after_a_trickle()
    burst_wait, handoffs = {}, {}
    for notice in (0, 600):
        s = setup(2.5)
        s = dataclasses.replace(s, twin=dataclasses.replace(s.twin, kueue_notice_seconds=notice))
        policy = predictive(s)
        record = replay(jobs, policy, setup=s).record
        burst_wait[notice] = float(np.mean((record.job_start - record.job_submit)[in_burst]))
        handoffs[notice] = policy.handoffs
    assert burst_wait[600] <= 30  # warm: the preemption grace, no lead time
    assert burst_wait[0] >= 120  # cold: new nodes and their image pull, then reactive
    assert handoffs[0] >= 1 and handoffs[600] == 0


def test_the_twins_history_read_once_a_minute_is_what_a_fresh_read_gives() -> None:
    """``TwinPorts`` reuses a read within its minute (a speed-up): at every tick of a replay
    the series the loop gets equals one computed afresh from the twin, minute after minute."""
    jobs, s = synthetic(2, seed=4), setup(2)
    policy = predictive(s)
    ports, compared = policy.ports, []
    fetch = ports.fetch

    def checked(pool: str, *, start: int, end: int, step_seconds: int) -> object:
        got = fetch(pool, start=start, end=end, step_seconds=step_seconds)
        first, values = ports._twin().demand_history(since=start)
        fresh = ports._series(pool, first, values, end=end, step_seconds=step_seconds)
        assert np.array_equal(got[0].values, fresh[0].values, equal_nan=True)
        assert np.array_equal(got[0].timestamps, fresh[0].timestamps)
        assert got[1] == fresh[1]
        compared.append(int(got[0].timestamps[-1]))
        return got

    ports.fetch = checked  # type: ignore[method-assign]
    replay(jobs, policy, setup=s)
    assert len(set(compared)) > 1000 and len(compared) > len(set(compared))
