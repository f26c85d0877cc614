"""GPU work the cluster announces before its pods exist, and what of it is due now.

A CronJob says when its next run starts; a JobSet says which of its jobs wait on others. Such
*announced items* are known, not forecast: the plan covers the ones whose earliest start falls
within the pool's lead time (prewarming earlier would only hold GPUs idle longer), and drops an
item once its pods exist (they are then real demand) or its latest start has passed (it did not
come). Pure: the notice sources (``actuators.notice``) build the items from the objects.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class AnnouncedItem:
    """One piece of announced GPU work on one pool."""

    pool: str
    gpus_per_pod: int
    pods: int
    gang: bool
    """All pods must run at once (an indexed Job, a JobSet's replicated job): whole nodes."""
    earliest_start: int
    """Epoch seconds its first pod can be created, at the soonest."""
    latest_start: int
    """Past this without its pods, it did not come: the item is withdrawn."""
    source: str
    """The notice source that read it (``cronjob``, ``jobset``...)."""
    key: str
    """What announced it, e.g. ``cronjob team-a/nightly@2026-12-03T02:00:00Z``."""

    def __post_init__(self) -> None:
        if self.gpus_per_pod < 0 or self.pods < 0:
            raise ValueError(f"{self.key}: GPUs and pods must be >= 0")
        if self.latest_start < self.earliest_start:
            raise ValueError(f"{self.key}: latest start before earliest start")

    @property
    def gpus(self) -> int:
        return self.gpus_per_pod * self.pods

    def due(self, now: int, *, within_seconds: float) -> bool:
        """Should the plan cover it now: it starts within ``within_seconds`` and may still come."""
        return self.earliest_start <= now + within_seconds and now <= self.latest_start


def due_items(
    items: Iterable[AnnouncedItem], now: int, *, within_seconds: float
) -> tuple[AnnouncedItem, ...]:
    """The items the plan covers now, soonest first."""
    return tuple(
        sorted(
            (i for i in items if i.due(now, within_seconds=within_seconds)),
            key=lambda i: (i.earliest_start, i.key),
        )
    )


@dataclass(frozen=True)
class SourceStatus:
    """One notice source as the last observation found it."""

    source: str
    installed: bool
    """False: the cluster does not serve its API (or we may not read it); it costs nothing."""
    items: int = 0
    problem: str | None = None
    """Why it could not be read this time (forbidden, a malformed object)."""
