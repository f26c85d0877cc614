"""Declared notice in replay: which jobs are announced, the objects the twin serves for them,
and the daemon's own notice sources reading them - the same items from the twin as from the API
double holding the same objects."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from forecaster.actuators.attribution import shape
from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.notice.base import GRACE_SECONDS, read_notice
from forecaster.actuators.notice.registry import SOURCES
from forecaster.cli import main
from forecaster.core.jobs import JobTrace
from forecaster.durations import DAY
from forecaster.simulation.declared_notice import (
    CRON,
    NONE,
    PIPELINE,
    QUEUE,
    DeclaredNotice,
    NoticeMix,
    TwinObjects,
    declare,
    notice_hold,
    notice_waits,
)
from forecaster.simulation.replay import replay
from forecaster.simulation.twin import OBJECT_SOURCES, TwinConfig, _announced
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import REPLAY_T0 as T0
from tests.factories import bursts_after_a_trickle, predictive, setup, synthetic

TRACE = str(Path(__file__).resolve().parents[2] / "data" / "samples" / "msr-itp-cluster04-jobs.csv")

NOTICE_SOURCES = [SOURCES.get(name) for name in OBJECT_SOURCES]


def test_the_notice_option_parses_and_names_what_is_wrong() -> None:
    mix = NoticeMix.parse("cron=15%:1d,pipeline=0.15:2m-15m,seed=3")
    assert mix == NoticeMix(0.15, 86400, 0.15, 120, 900, 3)
    assert mix.label == "cron 15% (24 h), pipeline 15% (2-15 min), seed 3"
    for text, word in [
        ("cron=lots", "cron"),
        ("pipeline=0.1:soon", "pipeline"),
        ("weekly=0.1", "weekly"),
        ("cron=0.8,pipeline=0.5", "more than 1"),
        ("pipeline=0.1:2h-3h", "<= 1h"),
    ]:
        with pytest.raises(ValueError, match=word):
            NoticeMix.parse(text)


def test_whole_submissions_are_drawn_until_each_share_is_reached() -> None:
    jobs = synthetic(10, seed=2)
    mix = NoticeMix(cron_share=0.15, pipeline_share=0.15, seed=1)
    notice = declare(jobs, mix)
    hours = jobs.gpus * jobs.duration
    submission = np.cumsum(np.concatenate(([True], np.diff(jobs.submit) > 60))) - 1
    largest = np.bincount(submission, weights=hours).max()
    for kind in (CRON, PIPELINE):  # reached, overshot by at most the last submission drawn
        share = hours[notice.kind == kind].sum() / hours.sum()
        assert 0.15 <= share < 0.15 + largest / hours.sum() + 1e-9
    assert notice.announced_share(jobs) >= 0.3
    # jobs of one submission (at most 60 s apart) share a fate
    same = np.diff(jobs.submit) <= 60
    assert np.all(notice.kind[1:][same] == notice.kind[:-1][same])
    cron = notice.kind == CRON
    assert np.allclose(notice.announce_at[cron], jobs.submit[cron] - DAY)
    lead = (jobs.submit - notice.announce_at)[notice.kind == PIPELINE]
    assert lead.min() >= 120 and lead.max() <= 900
    assert np.all(np.isnan(notice.announce_at[notice.kind == NONE]))
    again = declare(jobs, mix)
    assert np.array_equal(again.kind, notice.kind)  # the seed fixes the draw
    other = declare(jobs, dataclasses.replace(mix, seed=2))
    assert not np.array_equal(other.kind, notice.kind)
    assert declare(jobs, NoticeMix()).announced_share(jobs) == 0


def test_the_twin_and_the_api_double_give_the_same_items_from_the_same_objects() -> None:
    """The replay path (the twin's objects, read through its lister) and the daemon path (the
    same objects in the API double, schema-validated, read through the Kube adapter)."""
    jobs = synthetic(3, seed=4, start=T0)
    notice = declare(jobs, NoticeMix(cron_share=0.4, pipeline_share=0.4, seed=0))
    objects = TwinObjects(jobs, notice, pool="gpu", gpus_per_node=8)
    pipelines = np.flatnonzero(notice.kind == PIPELINE)
    crons = jobs.submit[notice.kind == CRON]
    # a moment a pipeline is announced and a cron run is due within the hour
    now = next(
        int(jobs.submit[j]) - 60
        for j in pipelines
        if jobs.submit[j] - notice.announce_at[j] > 60
        and np.any((crons > jobs.submit[j]) & (crons < jobs.submit[j] + 3000))
    )
    objects.now = now
    twin = read_notice(objects, NOTICE_SOURCES, pools=objects.pools(), now=now)
    served = {
        plural: objects.list_objects(group, "v1" if group == "batch" else "v1alpha2", plural)
        for group, plural in [
            ("batch", "cronjobs"),
            ("jobset.x-k8s.io", "jobsets"),
            ("batch", "jobs"),
        ]
    }
    assert served["cronjobs"] and served["jobsets"]  # the draw announced both kinds by now
    with KubeApiDouble(jobsets=True) as api:
        api.clock = float(now - 60)
        ClusterSim(api).add_nodepool("gpu", limit_gpus=1000)
        for plural, found in served.items():
            for obj in found or []:
                api.put(plural, obj)
        assert api.invalid == []
        kube = Kube(api_client(host=api.url), dry_run=True)
        shapes = [shape(n) for n in kube.list_nodepools()]
        daemon = read_notice(kube, NOTICE_SOURCES, pools=shapes, now=now)
    assert sorted(daemon.items["gpu"], key=str) == sorted(twin.items["gpu"], key=str)
    assert {i.source for i in twin.items["gpu"]} == {"cronjob", "jobset"}


def test_declared_notice_warms_the_bursts_the_forecast_cannot_see() -> None:
    """As the Kueue-notice test, through CronJobs: every 30 minutes for 8 hours a batch of
    twelve 8-GPU jobs lands. Announced a day ahead by CronJobs the daemon's source reads from
    the twin, the placeholders are warm when the pods come."""
    jobs, in_burst = bursts_after_a_trickle()
    waits = {}
    for mix in (None, NoticeMix(cron_share=1.0)):
        s = setup(2.5)
        s = dataclasses.replace(s, twin=dataclasses.replace(s.twin, notice=mix))
        record = replay(jobs, predictive(s), setup=s).record
        waits[mix is not None] = float(np.mean((record.job_start - record.job_submit)[in_burst]))
    assert waits[True] <= 30  # warm: the preemption grace, no lead time
    assert waits[False] >= 120  # cold: new nodes and their image pull


def test_the_twin_reads_its_objects_with_the_configured_sources_only() -> None:
    """A daemon configured without the ``cronjob`` source reads none of the CronJobs the twin
    declares: the replay announces none of their work (the configured pool, as it runs)."""
    jobs, _ = bursts_after_a_trickle()
    s = setup(2.5)
    cron = NoticeMix(cron_share=1.0)
    read = dataclasses.replace(s, twin=dataclasses.replace(s.twin, notice=cron))
    unread = dataclasses.replace(
        read, twin=dataclasses.replace(read.twin, notice_sources=("jobset",))
    )
    assert replay(jobs, predictive(read), setup=read).notice_ended
    assert replay(jobs, predictive(unread), setup=unread).notice_ended == ()


def test_announced_prewarm_is_held_from_the_window_not_from_the_announcement() -> None:
    """Each run announced a day ahead is held for from the reading it first falls in the
    prewarm window (the forecast horizon) to the reading its pods came in - not for the day it
    was known - and what that costs is measured against the GPU-hours the runs used."""
    jobs, _ = bursts_after_a_trickle()
    s = setup(2.5)
    s = dataclasses.replace(s, twin=dataclasses.replace(s.twin, notice=NoticeMix(cron_share=1.0)))
    run = replay(jobs, predictive(s), setup=s)
    long_known = [o for o in run.notice_ended if o.notice_seconds >= 3600]
    assert long_known and all(o.came for o in run.notice_ended)
    window = s.horizon_seconds  # the daemon's prewarm window: its forecast horizon
    for o in long_known:
        # due from its schedule minute - window; came at the reading after its pods: the
        # seconds past the minute, and up to a tick
        assert window - 60 <= o.held_gpu_hours * 3600 / o.gpus <= window + 60 + 60, o
    hold = notice_hold(
        run.notice_ended,
        jobs,
        declare(jobs, NoticeMix(cron_share=1.0)),
        window=(s.warmup_end, s.end),
    )
    inside = (jobs.submit >= s.warmup_end) & (jobs.submit < s.end)
    assert hold.announced_gpu_hours == pytest.approx(
        float((jobs.gpus * jobs.duration)[inside].sum()) / 3600
    )
    assert hold.withdrawn == 0 and 0.05 < hold.share < 0.12  # 20-minute jobs, ~11 min held


def test_waits_are_split_by_the_notice_the_plan_had() -> None:
    submit = np.array([100.0, 200.0, 300.0, 400.0, 500.0])
    start = np.array([100.0, 230.0, 390.0, 420.0, np.nan])
    notice = DeclaredNotice(
        kind=np.array([CRON, PIPELINE, PIPELINE, NONE, NONE], dtype=np.int8),
        announce_at=np.array([-86300.0, -400.0, 200.0, np.nan, np.nan]),
    )
    groups = notice_waits(submit, start, notice, lead_seconds=360, window=(150, 600), end=560)
    assert [(g.group, g.jobs, g.mean_wait_s) for g in groups] == [
        ("announced >= 360 s ahead", 1, 30.0),  # the first job is before the window
        ("announced < 360 s ahead", 1, 90.0),
        ("not announced", 2, 40.0),  # 20 s, and 60 s so far for the one still waiting
    ]


def test_slow_waits_are_told_apart_from_waits_on_a_node_still_pulling() -> None:
    """Over 30 s is counted per group, and which of those waited after binding (the node's
    image pull), not for capacity: the two causes a warm pool has, told apart."""
    submit = np.array([200.0, 300.0, 400.0, 500.0])
    start = np.array([260.0, 390.0, 420.0, np.nan])
    # the first bound 10 s in, then 50 s on its node
    placed = np.array([210.0, 385.0, 420.0, np.nan])
    notice = DeclaredNotice(
        kind=np.array([PIPELINE, PIPELINE, NONE, NONE], dtype=np.int8),
        announce_at=np.array([-400.0, 200.0, np.nan, np.nan]),
    )
    groups = notice_waits(
        submit, start, notice, lead_seconds=360, window=(150, 600), end=560, placed=placed
    )
    assert [(g.jobs, g.over_30s, g.over_30s_on_node) for g in groups] == [
        (1, 1, 1),  # 60 s, 50 of them on its node
        (1, 1, 0),  # 90 s waiting for a node, 5 s on it
        (2, 1, 0),  # 20 s; and 60 s so far, never bound
    ]


def test_replay_labels_simulated_notice_and_splits_the_waits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [
        "replay",
        "--jobs",
        TRACE,
        "--policy",
        "static:32",
        "--notice",
        "cron=15%:1d,pipeline=15%:2m-15m,seed=1",
        "--start-day",
        "10",
        "--warmup-days",
        "1",
        "--end-day",
        "12",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("simulated notice: cron 15% (24 h), pipeline 15% (2-15 min), seed 1;")
    assert "static:32 (simulated notice): announced >= 360 s ahead: " in out


def test_a_bad_notice_option_is_one_line_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["replay", "--jobs", TRACE, "--notice", "cron=lots"])
    assert exited.value.code == 2
    assert "argument --notice: --notice cron: 'lots' is not a share" in capsys.readouterr().err


def test_queued_jobs_are_timed_by_the_quota_that_frees_in_the_twin_and_in_the_double() -> None:
    """``queue=S:A-B``: a queued job waits in Kueue's pending queue; the ``kueue-pending``
    source, reading the twin's objects (ClusterQueue, running and pending workloads, the
    visibility API's answer), expects it at its submission - and reads the same from the same
    objects in the API double serving Kueue and its visibility API."""
    mix = NoticeMix.parse("queue=50%:2m-10m,seed=3")
    assert (mix.queue_share, mix.queue_min_seconds, mix.queue_max_seconds) == (0.5, 120, 600)
    assert "queue 50% (2-10 min)" in mix.label
    jobs = synthetic(2, seed=5, start=T0)
    notice = declare(jobs, mix)
    queued = np.flatnonzero(notice.kind == QUEUE)
    lead = jobs.submit[queued] - notice.announce_at[queued]
    assert queued.size and lead.min() >= 120 and lead.max() <= 600
    objects = TwinObjects(jobs, notice, pool="gpu", gpus_per_node=8)
    j = next(int(j) for j in queued if jobs.submit[j] - notice.announce_at[j] > 120)
    now = int(jobs.submit[j]) - 60
    objects.now = now
    twin = read_notice(objects, NOTICE_SOURCES, pools=objects.pools(), now=now)
    mine = [i for i in twin.items["gpu"] if i.key == f"pending replay/replay-queued-{j}/main"]
    assert [(i.earliest_start, i.gpus, i.in_history) for i in mine] == [
        (math.ceil(jobs.submit[j]), int(jobs.gpus[j]), True)
    ]
    with KubeApiDouble(kueue=True, kueue_visibility=True) as api:
        api.clock = float(now - 600)
        ClusterSim(api).add_nodepool("gpu", limit_gpus=1000)
        for plural in ("resourceflavors", "clusterqueues", "workloads"):
            for obj in objects.list_objects("kueue.x-k8s.io", "v1beta2", plural) or []:
                api.put(plural, obj)
        for cq in api.objects("clusterqueues"):
            name = cq["metadata"]["name"]
            api.put("localqueues", local_queue(name))
        assert api.invalid == []
        kube = Kube(api_client(host=api.url), dry_run=True)
        shapes = [shape(n) for n in kube.list_nodepools()]
        daemon = read_notice(kube, NOTICE_SOURCES, pools=shapes, now=now)
    assert sorted(daemon.items["gpu"], key=str) == sorted(twin.items["gpu"], key=str)


def local_queue(name: str) -> dict[str, object]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": "replay"},
        "spec": {"clusterQueue": name},
    }


def test_queued_jobs_stay_in_the_twins_histories_cron_and_pipeline_jobs_do_not() -> None:
    """As in a cluster: the ``kueue-pending`` source marks no pods (Kueue work is learnt as
    every Kueue workload is), CronJobs' and JobSets' pods are marked and left out."""
    jobs = synthetic(2, seed=5, start=T0)
    mix = NoticeMix.parse("cron=20%,pipeline=20%,queue=20%,seed=3")
    config = TwinConfig(notice=mix)
    _, flags = _announced(jobs, config)
    kind = declare(jobs, mix).kind
    assert {k: {f for f, kk in zip(flags, kind, strict=True) if kk == k} for k in set(kind)} == {
        NONE: {False},
        CRON: {True},
        PIPELINE: {True},
        QUEUE: {False},
    }


def test_a_burst_of_pipelines_is_one_earlier_run_not_the_whole_window() -> None:
    """The JobSet source's ETA is the fastest earlier run. A submission of 30 one-GPU pipelines
    (one run time: their jobs share a fate) must not fill the twin's kept runs on its own, or
    the next pipeline's ETA is that run's alone: here the 14-minute burst, where a 2-minute run
    came before it (on main before this, 2 of the 4 runs that missed the 30 s bound)."""
    fast, slow, later = T0 + 1000.0, T0 + 5000.0, T0 + 9000.0
    submit = np.array([fast] + [slow + i for i in range(30)] + [later])
    jobs = JobTrace(submit, np.full(submit.size, 600.0), np.ones(submit.size, dtype=np.int64))
    ahead = np.array([120.0] + [840.0] * 30 + [600.0])
    notice = DeclaredNotice(np.full(submit.size, PIPELINE, dtype=np.int8), submit - ahead)
    objects = TwinObjects(jobs, notice, pool="gpu", gpus_per_node=8)
    now = int(later - 500)  # the last pipeline's initializer has run 100 s
    objects.now = now
    items = read_notice(objects, NOTICE_SOURCES, pools=objects.pools(), now=now).items["gpu"]
    # started 100 s ago: due in 20 s after the fastest (120 s) run, at the latest after the slowest
    assert [i.earliest_start - now for i in items] == [120 - 100]
    assert [i.latest_start - now for i in items] == [840 - 100 + GRACE_SECONDS]
