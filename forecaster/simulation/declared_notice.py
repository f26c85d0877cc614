"""Declared notice for replay: some of a trace's jobs are announced before their pods exist.

A job trace records when pods were created, not whether anything announced them. To measure
what notice buys, ``replay --notice cron=S:P,pipeline=S:A-B,queue=S:A-B,seed=N`` declares it: whole
*submissions* (jobs at most ``SUBMISSION_GAP_SECONDS`` apart share a fate) are drawn by seeded
uniform sampling, independent of size, until ``S`` of the trace's GPU-hours are announced, first
for ``cron``, then ``pipeline``, then ``queue``:

* ``cron`` jobs come from a CronJob due at their submission minute, its object visible from
  submit - P (default 1 day);
* ``pipeline`` jobs are the GPU stage of a JobSet waiting on a CPU initializer that started
  A-B before (drawn uniformly per submission); earlier pipeline runs' initializers are kept as
  finished Jobs, so the JobSet source estimates the ETA from them as in a cluster;
* ``queue`` jobs wait A-B (drawn uniformly per submission) in Kueue's pending queue: each in a
  ClusterQueue of its own whose quota a running workload holds until it must end (admitted at
  the announcement, ``maximumExecutionTimeSeconds`` up to the job's submission), so the
  ``kueue-pending`` source times it from the quota freed, as in a cluster. Like every Kueue
  workload its pods stay in the histories (the source marks none).

The twin serves these objects through ``ObjectLister`` (``TwinObjects``), and the daemon's own
notice sources (``actuators.notice``) read them: the replayed plan sees what a cluster's would.
Static headroom reads nothing. Figures from such runs are *simulated notice*.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from forecaster.accelerators import GPU, taint_key
from forecaster.actuators.attribution import NodePoolShape, shape
from forecaster.actuators.notice.base import ApiKind, Obj
from forecaster.actuators.notice.cronjobs import CRONJOBS
from forecaster.actuators.notice.jobsets import (
    JOBSET_LABEL,
    JOBSETS,
    REPLICATED_JOB_LABEL,
)
from forecaster.actuators.notice.kueue_pending import PENDING
from forecaster.actuators.notice.kueue_reserved import KUEUE, WORKLOADS
from forecaster.actuators.quantities import kube_timestamp
from forecaster.core.jobs import JobTrace
from forecaster.core.notice import Outcome
from forecaster.simulation import queue_objects
from forecaster.simulation.kueue_objects import flavor

NONE, CRON, PIPELINE, QUEUE = 0, 1, 2, 3
LOOKAHEAD_SECONDS = 3600
"""The twin lists an object from at most this long before its pods (a replay-speed shortcut:
planning windows are shorter, so plans and precision are unchanged; pipeline notice must not
exceed it)."""
EARLIER_RUNS = 20
"""Earlier pipeline submissions whose finished initializer Jobs the twin keeps (what the JobSet
source estimates ETAs from): one Job each - a submission's jobs share one run time, so its
others would change no estimate - where a cluster keeps every finished Job until its JobSet is
deleted. Kept by job, not by submission, one burst of 20 one-GPU pipelines filled the window
with a single run time, and the next pipeline's ETA was that run's."""
_CPU_POD = {"restartPolicy": "Never", "containers": [{"name": "init", "image": "replay"}]}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def _seconds(text: str, *, field: str) -> float:
    match = _DURATION.match(text.strip())
    if not match:
        raise ValueError(f"--notice {field}: {text!r} is not a duration (e.g. 90s, 15m, 1d)")
    return float(match.group(1)) * _UNITS[match.group(2)]


@dataclass(frozen=True)
class NoticeMix:
    """Which share of GPU-hours is announced, how, and the seed that draws the jobs."""

    cron_share: float = 0.0
    cron_notice_seconds: float = 86400.0
    pipeline_share: float = 0.0
    pipeline_min_seconds: float = 120.0
    pipeline_max_seconds: float = 900.0
    seed: int = 0
    queue_share: float = 0.0
    queue_min_seconds: float = 60.0
    queue_max_seconds: float = 900.0

    def __post_init__(self) -> None:
        if min(self.cron_share, self.pipeline_share, self.queue_share) < 0:
            raise ValueError("--notice shares must be >= 0")
        if self.cron_share + self.pipeline_share + self.queue_share > 1:
            raise ValueError("--notice shares add up to more than 1")
        if not 0 < self.queue_min_seconds <= self.queue_max_seconds <= LOOKAHEAD_SECONDS:
            raise ValueError("--notice queue=S:A-B needs 0 < A <= B <= 1h")
        if not 0 < self.pipeline_min_seconds <= self.pipeline_max_seconds <= LOOKAHEAD_SECONDS:
            raise ValueError("--notice pipeline=S:A-B needs 0 < A <= B <= 1h")
        if self.cron_notice_seconds <= 0:
            raise ValueError("--notice cron=S:P needs P > 0")

    @classmethod
    def parse(cls, text: str) -> NoticeMix:
        """``cron=0.15:1d,pipeline=0.15:2m-15m,seed=1`` (shares as fractions or percentages)."""
        values: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, _, value = part.partition("=")
            if key == "seed":
                values["seed"] = int(value)
            elif key == "cron":
                share, _, notice = value.partition(":")
                values["cron_share"] = _share(share, field="cron")
                if notice:
                    values["cron_notice_seconds"] = _seconds(notice, field="cron")
            elif key in ("pipeline", "queue"):
                share, _, span = value.partition(":")
                values[f"{key}_share"] = _share(share, field=key)
                if span:
                    low, _, high = span.partition("-")
                    values[f"{key}_min_seconds"] = _seconds(low, field=key)
                    values[f"{key}_max_seconds"] = _seconds(high or low, field=key)
            else:
                raise ValueError(
                    f"--notice: unknown part {key!r} (cron=, pipeline=, queue=, seed=)"
                )
        return cls(**values)

    @property
    def label(self) -> str:
        """How reports name it: ``cron 15% (1d), pipeline 15% (2-15 min), seed 1``."""
        return (
            f"cron {self.cron_share:.0%} ({self.cron_notice_seconds / 3600:g} h),"
            f" pipeline {self.pipeline_share:.0%}"
            f" ({self.pipeline_min_seconds / 60:g}-{self.pipeline_max_seconds / 60:g} min),"
            + (
                f" queue {self.queue_share:.0%}"
                f" ({self.queue_min_seconds / 60:g}-{self.queue_max_seconds / 60:g} min),"
                if self.queue_share
                else ""
            )
            + f" seed {self.seed}"
        )


def _share(text: str, *, field: str) -> float:
    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise ValueError(f"--notice {field}: {text!r} is not a share (e.g. 0.15 or 15%)") from None
    return value


@dataclass(frozen=True)
class DeclaredNotice:
    """Per job: how it is announced (``NONE``/``CRON``/``PIPELINE``) and from when."""

    kind: npt.NDArray[np.int8]
    announce_at: npt.NDArray[np.float64]

    def announced_share(self, jobs: JobTrace) -> float:
        """Share of the trace's GPU-hours announced."""
        hours = jobs.gpus * jobs.duration
        total = float(hours.sum())
        return float(hours[self.kind != NONE].sum()) / total if total else 0.0


def declare(jobs: JobTrace, mix: NoticeMix, *, gap_seconds: float = 60.0) -> DeclaredNotice:
    """Draw the announced submissions (see the module docstring); deterministic in ``mix``."""
    n = len(jobs)
    kind = np.zeros(n, dtype=np.int8)
    announce = np.full(n, np.nan)
    if n == 0:
        return DeclaredNotice(kind, announce)
    begins = np.concatenate(([True], np.diff(jobs.submit) > gap_seconds))
    submission = np.cumsum(begins) - 1
    hours = np.bincount(submission, weights=jobs.gpus * jobs.duration)
    total = float(hours.sum())
    rng = np.random.default_rng(mix.seed)
    order = rng.permutation(len(hours))
    notice = rng.uniform(mix.pipeline_min_seconds, mix.pipeline_max_seconds, size=len(hours))
    queued = (  # drawn after the rest: a mix without queue draws as it always did
        rng.uniform(mix.queue_min_seconds, mix.queue_max_seconds, size=len(hours))
        if mix.queue_share
        else np.zeros(len(hours))
    )
    chosen = np.zeros(len(hours), dtype=np.int8)
    taken = {CRON: 0.0, PIPELINE: 0.0, QUEUE: 0.0}
    wanted = {
        CRON: mix.cron_share * total,
        PIPELINE: mix.pipeline_share * total,
        QUEUE: mix.queue_share * total,
    }
    for s in order:
        for k in (CRON, PIPELINE, QUEUE):
            if taken[k] < wanted[k]:
                chosen[s] = k
                taken[k] += hours[s]
                break
        else:
            break
    kind = chosen[submission]
    lead = np.where(
        kind == CRON,
        mix.cron_notice_seconds,
        np.where(kind == QUEUE, queued[submission], notice[submission]),
    )
    announce = np.where(kind != NONE, jobs.submit - lead, np.nan)
    return DeclaredNotice(kind.astype(np.int8), announce)


class TwinObjects:
    """The CronJobs, JobSets and JobSets' Jobs the declared notice puts in the twin's cluster,
    served as ``ObjectLister``; ``now`` is the twin's clock."""

    def __init__(
        self,
        jobs: JobTrace,
        notice: DeclaredNotice,
        *,
        pool: str,
        gpus_per_node: int,
        resource: str = GPU,
    ) -> None:
        self.jobs = jobs
        self.notice = notice
        self.pool = pool
        self.gpus_per_node = gpus_per_node
        self.resource = resource
        self.now = 0.0
        self._pipeline = np.flatnonzero(notice.kind == PIPELINE)
        ahead = jobs.submit[self._pipeline] - notice.announce_at[self._pipeline]
        first = np.concatenate(([True], np.abs(np.diff(ahead)) > 1e-6)) if ahead.size else ahead > 0
        self._runs = self._pipeline[first]  # one pipeline job per submission (its notice draw)
        self._queued = np.flatnonzero(notice.kind == QUEUE)

    def pools(self) -> list[NodePoolShape]:
        """The twin's one NodePool, as the sources attribute templates to it."""
        taint = {"key": taint_key(self.resource), "value": "true", "effect": "NoSchedule"}
        template = {"spec": {"requirements": [], "taints": [taint]}}
        return [shape({"metadata": {"name": self.pool}, "spec": {"template": template}})]  # type: ignore[typeddict-item]

    def list_objects(
        self, group: str, version: str, plural: str, *, labels: str | None = None
    ) -> list[Obj] | None:
        kind = ApiKind(group, version, plural)
        if kind == ApiKind(CRONJOBS.group, CRONJOBS.version, CRONJOBS.plural):
            return [self._cronjob(j) for j in self._visible(CRON, LOOKAHEAD_SECONDS)]
        if kind == JOBSETS:
            return [self._jobset(j) for j in self._visible(PIPELINE, LOOKAHEAD_SECONDS)]
        if (group, plural) == ("batch", "jobs"):
            return self._initializer_jobs()
        if group == KUEUE and version == WORKLOADS.version and self._queued.size:
            return self._kueue(plural)
        return None  # nothing else is installed in the twin

    def get_subresource(
        self, group: str, version: str, plural: str, name: str, subresource: str
    ) -> Obj | None:
        """Kueue's visibility API, where queue notice is declared: a queued job's ClusterQueue
        lists its workload while the job waits."""
        if group != PENDING.group or subresource != PENDING.subresource or not self._queued.size:
            return None
        j = queue_objects.queue_of(name)
        if j is None or j not in self._visible(QUEUE, LOOKAHEAD_SECONDS):
            return {"items": []}
        return queue_objects.pending_summary(j)

    def _kueue(self, plural: str) -> list[Obj] | None:
        """Queued jobs' ClusterQueues and workloads, and the flavor of the twin's pool."""
        visible = self._visible(QUEUE, LOOKAHEAD_SECONDS)
        if plural == "resourceflavors":
            return [flavor(self.pool)]
        if plural == "clusterqueues":
            return [
                queue_objects.cluster_queue(
                    j, resource=self.resource, units=self._pod(j)[1] * self._pod(j)[2]
                )
                for j in visible
            ]
        if plural == "workloads":
            out = []
            for j in visible:
                spec, _, pods = self._pod(j)
                out += queue_objects.workloads(
                    j,
                    spec=spec,
                    pods=pods,
                    announced=float(self.notice.announce_at[j]),
                    submitted=float(self.jobs.submit[j]),
                )
            return out
        return None

    def _visible(self, kind: int, lookahead: float) -> list[int]:
        """Jobs of ``kind`` announced by now whose pods do not exist yet (and come within
        ``lookahead``)."""
        submit = self.jobs.submit
        first = int(np.searchsorted(submit, self.now, side="right"))
        last = int(np.searchsorted(submit, self.now + lookahead, side="right"))
        ids = np.arange(first, last)
        ids = ids[
            (self.notice.kind[first:last] == kind)
            & (self.notice.announce_at[first:last] <= self.now)
        ]
        return [int(i) for i in ids]

    def _pod(self, j: int) -> tuple[dict[str, Any], int, int]:
        gpus = int(self.jobs.gpus[j])
        per_pod = min(gpus, self.gpus_per_node)
        spec = {
            "restartPolicy": "Never",
            "nodeSelector": {"karpenter.sh/nodepool": self.pool},
            "tolerations": [
                {"key": taint_key(self.resource), "operator": "Exists", "effect": "NoSchedule"}
            ],
            "containers": [
                {
                    "name": "train",
                    "image": "replay",
                    "resources": {"requests": {self.resource: str(per_pod)}},
                }
            ],
        }
        return spec, per_pod, -(-gpus // per_pod) if per_pod else 0

    def _cronjob(self, j: int) -> Obj:
        due = datetime.fromtimestamp(float(self.jobs.submit[j]), UTC)
        spec, _, pods = self._pod(j)
        return {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {
                "name": f"replay-cron-{j}",
                "namespace": "replay",
                "creationTimestamp": kube_timestamp(float(self.notice.announce_at[j])),
            },
            "spec": {
                "schedule": f"{due.minute} {due.hour} {due.day} {due.month} *",
                "jobTemplate": {
                    "spec": {"parallelism": pods, "completions": pods, "template": {"spec": spec}}
                },
            },
            "status": {},
        }

    def _jobset(self, j: int) -> Obj:
        spec, _, pods = self._pod(j)
        zero = {"active": 0, "ready": 0, "succeeded": 0, "failed": 0, "suspended": 0}
        return {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": f"replay-pipeline-{j}", "namespace": "replay"},
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "initializer",
                        "replicas": 1,
                        "template": {
                            "spec": {
                                "template": {
                                    "spec": {
                                        "restartPolicy": "Never",
                                        "containers": [{"name": "init", "image": "replay"}],
                                    }
                                }
                            }
                        },
                    },
                    {
                        "name": "node",
                        "replicas": pods,
                        "dependsOn": [{"name": "initializer", "status": "Complete"}],
                        "template": {"spec": {"template": {"spec": spec}}},
                    },
                ]
            },
            "status": {
                "replicatedJobsStatus": [
                    {**zero, "name": "initializer", "active": 1, "ready": 1},
                    {**zero, "name": "node"},
                ]
            },
        }

    def _initializer_jobs(self) -> list[Obj]:
        """The running initializers of visible pipelines and the last finished ones."""
        done_upto = int(np.searchsorted(self.jobs.submit[self._runs], self.now, side="right"))
        finished = self._runs[max(0, done_upto - EARLIER_RUNS) : done_upto]
        jobs = [self._initializer(int(j), finished=True) for j in finished]
        visible = self._visible(PIPELINE, LOOKAHEAD_SECONDS)
        jobs += [self._initializer(j, finished=False) for j in visible]
        return jobs

    def _initializer(self, j: int, *, finished: bool) -> Obj:
        status: dict[str, Any] = {"startTime": kube_timestamp(float(self.notice.announce_at[j]))}
        if finished:
            status["completionTime"] = kube_timestamp(float(self.jobs.submit[j]))
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": f"replay-pipeline-{j}-initializer-0",
                "namespace": "replay",
                "labels": {
                    JOBSET_LABEL: f"replay-pipeline-{j}",
                    REPLICATED_JOB_LABEL: "initializer",
                },
            },
            "spec": {"template": {"spec": _CPU_POD}},
            "status": status,
        }


SLOW_SECONDS = 30.0
"""The issue's bound on the P95 wait of jobs announced at least a lead time ahead."""


@dataclass(frozen=True)
class NoticeWaits:
    """Waits of one group of jobs submitted in the metrics window."""

    group: str
    jobs: int
    p95_wait_s: float
    mean_wait_s: float
    over_30s: int = 0
    """Jobs that waited over 30 s (the issue's bound for jobs announced a lead time ahead)."""
    over_30s_on_node: int = 0
    """Of those, jobs that waited over 30 s *after* binding, on a node still pulling the image
    (in the replays traced: launched for an earlier burst, its placeholder removed mid-pull) -
    capacity was there, warm it was not."""


def notice_waits(
    submit: npt.NDArray[np.float64],
    start: npt.NDArray[np.float64],
    notice: DeclaredNotice,
    *,
    lead_seconds: float,
    window: tuple[float, float],
    end: float,
    placed: npt.NDArray[np.float64] | None = None,
) -> list[NoticeWaits]:
    """Waits split by what the plan could know: announced at least ``lead_seconds`` ahead,
    announced later than that, not announced (jobs submitted in ``window``; one not started by
    ``end`` counts with its wait so far). With ``placed`` (the twin's binding times) it also
    counts the jobs that waited over 30 s on the node they were bound to."""
    wait = np.where(np.isnan(start), end - submit, start - submit)
    on_node = np.zeros_like(wait) if placed is None else np.nan_to_num(start - placed)
    inside = (submit >= window[0]) & (submit < window[1])
    ahead = submit - notice.announce_at
    groups = [
        (f"announced >= {lead_seconds:g} s ahead", (notice.kind != NONE) & (ahead >= lead_seconds)),
        (f"announced < {lead_seconds:g} s ahead", (notice.kind != NONE) & (ahead < lead_seconds)),
        ("not announced", notice.kind == NONE),
    ]
    out = []
    for name, mask in groups:
        selected = inside & mask
        chosen = wait[selected]
        if chosen.size:
            out.append(
                NoticeWaits(
                    name,
                    int(chosen.size),
                    float(np.percentile(chosen, 95)),
                    float(chosen.mean()),
                    over_30s=int((chosen > SLOW_SECONDS).sum()),
                    over_30s_on_node=int((on_node[selected] > SLOW_SECONDS).sum()),
                )
            )
        else:
            out.append(NoticeWaits(name, 0, float("nan"), float("nan")))
    return out


@dataclass(frozen=True)
class NoticeHold:
    """The prewarm held for announced items while none of their pods existed, against the
    GPU-hours those items' jobs ran (the issue's bound: at most 5 %)."""

    held_gpu_hours: float
    """The daemon's ledger: each item's GPUs from the reading it first became due (its
    earliest start within the prewarm window) to the reading its pods came in, or to its
    latest start when withdrawn (``core.notice.Outcome.held_gpu_hours``); items resolved in
    the window. An upper bound on what was held: caps, or a pool that did not act (no model
    yet), are not deducted."""
    announced_gpu_hours: float
    """GPUs x run time of the announced jobs submitted in the window."""
    withdrawn: int
    """Items that did not come (the twin announces only work that runs, so 0 unless an ETA
    the JobSet source estimated ran past its latest start)."""

    @property
    def share(self) -> float:
        """Held over run: what acting on the notice cost, as a share of the work it covered."""
        return self.held_gpu_hours / self.announced_gpu_hours if self.announced_gpu_hours else 0.0

    def said(self) -> str:
        """One line for a replay's or a bench's output."""
        return (
            f"held for announced items before their pods came: {self.held_gpu_hours:.1f} GPU-h,"
            f" {self.share:.1%} of the {self.announced_gpu_hours:.1f} GPU-h they ran"
            f" ({self.withdrawn} withdrawn)"
        )


def notice_hold(
    outcomes: Iterable[Outcome],
    jobs: JobTrace,
    notice: DeclaredNotice,
    *,
    window: tuple[float, float],
) -> NoticeHold:
    """What the replay's daemon held for its announced items in ``window`` (``NoticeHold``)."""
    inside = [o for o in outcomes if window[0] <= o.at < window[1]]
    submitted = (jobs.submit >= window[0]) & (jobs.submit < window[1]) & (notice.kind != NONE)
    return NoticeHold(
        held_gpu_hours=sum(o.held_gpu_hours for o in inside),
        announced_gpu_hours=float((jobs.gpus * jobs.duration)[submitted].sum()) / 3600,
        withdrawn=sum(not o.came for o in inside),
    )
