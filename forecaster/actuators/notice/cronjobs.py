"""CronJobs (batch/v1): the next run of each GPU CronJob, announced up to a period ahead.

The CronJob controller creates a run's Job at the scheduled time (in ``spec.timeZone``, else
the controller manager's time zone - UTC on managed clusters, assumed here), so its pods come
then, not at a forecast's guess. Per CronJob, the next run after the last one
(``status.lastScheduleTime``, else the object's creation) is announced with:

* GPUs: the pod template's GPUs x ``parallelism`` (at most ``completions``); not a gang (a
  Job's pods start independently);
* earliest start: the scheduled time; latest start: that time + ``startingDeadlineSeconds``
  (past it the controller skips the run), else + the grace (the controller starts a missed run
  late, not never);
* a run already due and not started is still announced until its latest start.

Nothing is announced for a suspended CronJob, for a template without GPUs, for a pod template
no pool can take, or - while a run is active - under ``concurrencyPolicy: Forbid`` (the next
run is skipped while one runs) or ``Replace`` (the new run takes the old one's place: no new
GPUs). Schedules are parsed by ``croniter`` (macros such as ``@hourly`` included).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import cast
from zoneinfo import ZoneInfo

from croniter import croniter

from forecaster.actuators.manifests import Pod, PodTemplateSpec
from forecaster.actuators.notice.base import ApiKind, NoticeContext, Obj, PodMarker
from forecaster.actuators.quantities import kube_timestamp, timestamp_seconds
from forecaster.core.notice import AnnouncedItem

CRONJOBS = ApiKind("batch", "v1", "cronjobs")


class CronJobSource:
    """The ``cronjob`` notice source."""

    name: str = "cronjob"
    kinds: tuple[ApiKind, ...] = (CRONJOBS,)

    def announce(self, obj: Obj, context: NoticeContext) -> list[AnnouncedItem]:
        spec = obj["spec"]
        if spec.get("suspend"):
            return []
        active = (obj.get("status") or {}).get("active") or []
        if active and spec.get("concurrencyPolicy", "Allow") in ("Forbid", "Replace"):
            return []
        job = spec["jobTemplate"].get("spec") or {}
        template = cast(PodTemplateSpec, job["template"])
        placed = context.placed(template)
        if placed is None:
            return []
        pool, per_pod = placed
        earliest, latest = next_run(obj, context.now, grace_seconds=context.grace_seconds)
        parallelism = int(job.get("parallelism", 1))
        completions = job.get("completions")
        pods = min(parallelism, int(completions)) if completions is not None else parallelism
        meta = obj["metadata"]
        when = kube_timestamp(earliest)
        return [
            AnnouncedItem(
                pool=pool,
                gpus_per_pod=per_pod,
                pods=pods,
                gang=False,
                earliest_start=earliest,
                latest_start=latest,
                source=self.name,
                key=f"cronjob {meta['namespace']}/{meta['name']}@{when}",
            )
        ]

    def marker(self, context: NoticeContext) -> PodMarker:
        """A pod of a CronJob's run: owned by a Job named ``<cronjob>-<minutes>`` (the name the
        CronJob controller gives each run's Job: its scheduled time in minutes since the epoch)
        in a namespace with that CronJob; its item is that run's."""
        crons = {
            (meta.get("namespace"), meta.get("name"))
            for meta in (obj.get("metadata") or {} for obj in context.objects.get(CRONJOBS, []))
        }

        def marks(pod: Pod) -> str | None:
            meta = pod.get("metadata") or {}
            namespace = meta.get("namespace")
            for ref in meta.get("ownerReferences") or []:
                base, _, minutes = str(ref.get("name", "")).rpartition("-")
                run = ref.get("kind") == "Job" and minutes.isdigit()
                if run and (namespace, base) in crons:
                    return f"cronjob {namespace}/{base}@{kube_timestamp(int(minutes) * 60)}"
            return None

        return marks


def next_run(obj: Obj, now: int, *, grace_seconds: int) -> tuple[int, int]:
    """(scheduled time, latest start) of the CronJob's next run not yet started, if any."""
    spec, status = obj["spec"], obj.get("status") or {}
    last = status.get("lastScheduleTime") or obj["metadata"]["creationTimestamp"]
    late = spec.get("startingDeadlineSeconds")
    window = int(late) if late is not None else grace_seconds
    return next_due(
        (spec["schedule"],), spec.get("timeZone") or "UTC", timestamp_seconds(last), now, window
    )


def next_due(
    schedules: Sequence[str], zone_name: str, last: float, now: int, window: int
) -> tuple[int, int]:
    """(scheduled time, latest start) of the first run of any of ``schedules`` after ``last``
    whose latest start (``window`` later) has not passed - a missed run is given up then."""
    for schedule in schedules:
        if not _valid(schedule):
            raise ValueError(f"schedule {schedule!r} is not a cron expression")
    due = min(_next_after(s, zone_name, last) for s in schedules)
    if due < now - window:  # missed for good: the first run whose deadline has not passed
        due = min(_next_after(s, zone_name, now - window - 1) for s in schedules)
    return due, due + window


@functools.lru_cache(maxsize=4096)
def _valid(schedule: str) -> bool:
    """Whether croniter reads the schedule (cached as ``_next_after``: as slow, as repeated)."""
    return bool(croniter.is_valid(schedule))


@functools.lru_cache(maxsize=4096)
def _next_after(schedule: str, zone_name: str, after: float) -> int:
    """The schedule's first run after ``after`` (epoch seconds) in that time zone. Cached: a
    CronJob is read every tick with the same last run, and croniter takes about a millisecond."""
    zone = ZoneInfo(zone_name) if zone_name != "UTC" else UTC
    return int(croniter(schedule, datetime.fromtimestamp(after, zone)).get_next(float))
