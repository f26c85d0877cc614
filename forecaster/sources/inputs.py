"""A pool's training inputs, gathered one way for every trainer.

The training job (``app.training``), the embedded default's retrains (``service.embedded``)
and replay's weekly retraining (``simulation.replay``) all train on the same two series: the
demand level and, where the source has pods' creation times, the arrivals on the same grid.
Each chooses its own window; how the inputs are read, and when arrivals are left out (and
why, in the log), is decided here once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from forecaster.core.quality import QualityReport
from forecaster.core.series import DemandSeries
from forecaster.errors import SourceError
from forecaster.sources.base import ArrivalSource, DemandSource, SpannedSource

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainingInputs:
    """What a model of one pool is trained on."""

    demand: DemandSeries
    report: QualityReport
    """What was wrong with the demand samples (``core.quality``)."""
    arrivals: DemandSeries | None
    """GPUs of the pods created per step, on ``demand``'s grid; None where the source has no
    creation times or they did not line up (the arrivals model is then skipped)."""


def history_end(source: DemandSource, pool: str, *, now: int, step_seconds: int) -> int:
    """Where ``pool``'s history ends: a recorded source's last sample, a live one's ``now``."""
    if isinstance(source, SpannedSource):
        return source.span(pool, step_seconds=step_seconds)[1]
    return now


def gather(
    source: DemandSource,
    pool: str,
    *,
    start: int,
    end: int,
    step_seconds: int,
    arrivals: bool = True,
) -> TrainingInputs:
    """The demand of ``pool`` on ``start <= t <= end`` and, with ``arrivals``, the arrivals on
    its grid. A demand read error is raised; an arrivals one only leaves them out."""
    demand, report = source.fetch(pool, start=start, end=end, step_seconds=step_seconds)
    return TrainingInputs(demand, report, arrivals_on_grid(source, demand) if arrivals else None)


def arrivals_on_grid(source: DemandSource, series: DemandSeries) -> DemandSeries | None:
    """The pool's arrivals on ``series``' grid, where the source has them (Prometheus: pods'
    creation times; a CSV of demand has none): None, and why in the log, otherwise."""
    if not isinstance(source, ArrivalSource):
        log.info("pool %s: the source has no pod creation times: no arrivals model", series.name)
        return None
    try:
        arrivals, _ = source.fetch_arrivals(
            series.name, start=series.start, end=series.end, step_seconds=series.step_seconds
        )
    except SourceError as exc:
        log.warning("pool %s: no arrivals history (%s): no arrivals model", series.name, exc)
        return None
    if (arrivals.start, len(arrivals)) != (series.start, len(series)):
        log.warning(
            "pool %s: arrivals history is off the demand grid: no arrivals model", series.name
        )
        return None
    return arrivals
