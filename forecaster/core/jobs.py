"""A job trace: what the cluster twin replays (submission time, duration, GPUs per job)."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True, eq=False)
class JobTrace:
    """Jobs sorted by submission; times are epoch seconds, durations seconds."""

    submit: npt.NDArray[np.float64]
    duration: npt.NDArray[np.float64]
    gpus: npt.NDArray[np.int64]

    def __post_init__(self) -> None:
        if not (self.submit.shape == self.duration.shape == self.gpus.shape):
            raise ValueError("job arrays must have the same length")
        if self.submit.size and np.any(np.diff(self.submit) < 0):
            raise ValueError("jobs must be sorted by submission time")

    def __len__(self) -> int:
        return int(self.submit.size)

    def demand(self, *, start: int, end: int, step_seconds: int = 60) -> npt.NDArray[np.float64]:
        """GPUs requested at each grid point if every job started on submission."""
        grid = np.arange(start, end, step_seconds, dtype=np.float64)
        delta = np.zeros(grid.size + 1)
        first = np.searchsorted(grid, self.submit, side="left")
        last = np.searchsorted(grid, self.submit + self.duration, side="left")
        np.add.at(delta, first, self.gpus)
        np.add.at(delta, last, -self.gpus)
        return np.cumsum(delta)[:-1]

    def seen_between(self, start: float, end: float) -> JobTrace:
        """The jobs running in [start, end), as a cluster's pod history over that window shows
        them: one already running at ``start`` is submitted then, one still running at ``end``
        ends then (its later life is not known yet)."""
        finish = self.submit + self.duration
        keep = (self.submit < end) & (finish > start)
        submit = np.maximum(self.submit[keep], start)
        order = np.argsort(submit, kind="stable")
        return JobTrace(
            submit=submit[order],
            duration=(np.minimum(finish[keep], end) - submit)[order],
            gpus=self.gpus[keep][order],
        )


def jobs_from_series(
    start: int, step_seconds: int, *, values: npt.NDArray[np.float64], max_pod_gpus: int = 1
) -> JobTrace:
    """Turn a per-step demand series into pods: each rise submits pods of up to
    ``max_pod_gpus`` GPUs (whole ones first: a rise of 20 with 8 is 8 + 8 + 4), each fall ends
    the oldest running pods that fit in it (FIFO). With pods bigger than one GPU a fall smaller
    than the oldest pod leaves it running, so the level runs above the series by less than
    ``max_pod_gpus`` until later falls cover it. Gaps (NaN) hold the last level."""
    level = 0
    running: deque[int] = deque()  # indices of running pods, oldest first
    submit: list[float] = []
    gpus: list[int] = []
    ended: dict[int, float] = {}
    for i, value in enumerate(values):
        if not np.isfinite(value):
            continue
        t = float(start + i * step_seconds)
        target = round(value)
        while level < target:
            size = min(max_pod_gpus, target - level)
            running.append(len(submit))
            submit.append(t)
            gpus.append(size)
            level += size
        while running and level - target >= gpus[running[0]]:
            oldest = running.popleft()
            ended[oldest] = t
            level -= gpus[oldest]
    end = float(start + len(values) * step_seconds)
    duration = [ended.get(i, end) - s for i, s in enumerate(submit)]
    return JobTrace(
        submit=np.asarray(submit, dtype=np.float64),
        duration=np.asarray(duration, dtype=np.float64),
        gpus=np.asarray(gpus, dtype=np.int64),
    )


GANG_OWNERS_EXCLUDED = frozenset({"<none>", "ReplicaSet", "StatefulSet", "DaemonSet", "Node"})
"""Owner kinds (``kube_pod_owner``'s ``owner_kind``) whose pods are never one gang: their pods
are replicas scheduled one by one, not one submission (``<none>``: a bare pod)."""


@dataclass(frozen=True)
class SeenPod:
    """One pod as the cluster's history shows it (epoch seconds; ``started`` NaN: never on a
    node), with its owner (``kube_pod_owner``: namespace, kind, name; None: not known)."""

    created: float
    started: float
    last_alive: float
    gpus: int
    owner: tuple[str, str, str] | None = None

    @property
    def on_node(self) -> float:
        """When it reached a node; one never on a node ran (Pending) from its creation."""
        return self.created if math.isnan(self.started) else max(self.created, self.started)


def jobs_from_pods(pods: Sequence[SeenPod], *, step_seconds: int) -> JobTrace:
    """The pods as submissions: the pods of one owner created within ``step_seconds`` of its
    first are one gang (a Job's parallel pods, a JobSet's replicated Job, a PyTorchJob's
    workers), submitted when the first was created, started when the last reached a node
    (gang admission, as the twin models it) and running until the last was seen alive, with
    the GPUs of all of them. A pod without an owner, or owned by a kind that schedules replicas
    one by one (``GANG_OWNERS_EXCLUDED``), is a job of its own; so is a pod of the same owner
    created later (a retry, the next of a Job's serial completions)."""
    groups: list[list[SeenPod]] = []
    open_gang: dict[tuple[str, str, str], list[SeenPod]] = {}
    for pod in sorted(pods, key=lambda p: p.created):
        gang = open_gang.get(pod.owner) if pod.owner is not None else None
        if gang is not None and pod.created - gang[0].created <= step_seconds:
            gang.append(pod)
            continue
        groups.append([pod])
        if pod.owner is not None and pod.owner[1] not in GANG_OWNERS_EXCLUDED:
            open_gang[pod.owner] = groups[-1]
    submit = np.array([g[0].created for g in groups], dtype=np.float64)
    began = np.array([max(p.on_node for p in g) for g in groups], dtype=np.float64)
    last = np.array([max(p.last_alive for p in g) for g in groups], dtype=np.float64)
    return JobTrace(
        submit=submit,
        duration=np.maximum(last - began, float(step_seconds)),
        gpus=np.array([sum(p.gpus for p in g) for g in groups], dtype=np.int64),
    )
