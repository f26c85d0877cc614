"""A job trace: what the cluster twin replays (submission time, duration, GPUs per job)."""

from __future__ import annotations

from collections import deque
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
