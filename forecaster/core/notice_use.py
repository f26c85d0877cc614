"""How much of a pool's GPU work came announced, in GPU-hours, and with how much notice.

The notice ledger (``core.notice``) learns each announced item's notice when its pods come, in
GPUs; what a platform team weighs is GPU-hours - a nightly 64-GPU run of six hours is not one
item among many. So each observation the pods are linked to their items: a source's marker
names the item a pod is of (a CronJob's run Job, a JobSet's waiting ReplicatedJob), and the
observer counts the GPUs of bound pods per item (``PoolSnapshot.announced_running``). Each
item's pods are counted as it came:

* ``ahead``: announced at least the pool's prewarm window (its lead time) before it came, so
  prewarm could be warm;
* ``short``: announced, with less notice than that;
* ``unmeasured``: pods of announced work whose item this daemon never saw come (it started
  after, or the marker could not name the item): announced, notice unknown.

GPUs are held from one reading to the next (a step function, as the spend ledger charges), for
at most ``MAX_STEP_SECONDS`` - a longer gap is the daemon down, not work seen. Totals are kept
per UTC day for ``WINDOW_DAYS`` days, so the figures read "the last 7 days" to the day; the
pool's total (every real pod's GPUs) is the share's denominator. Pure: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

AHEAD, SHORT, UNMEASURED = "ahead", "short", "unmeasured"
KINDS = (AHEAD, SHORT, UNMEASURED)
ALL = "all"
"""The kind of a pool's total (every real pod), kept under the source ``""``."""
DAY_SECONDS = 86400
WINDOW_DAYS = 7
"""Days summed: today so far and the six before it."""
MAX_STEP_SECONDS = 900
"""A reading's GPUs count until the next reading, at most this long (quiet ticks replan about
once a minute; a longer gap is the daemon not running)."""
LINK_KEPT_SECONDS = DAY_SECONDS
"""An item's link is forgotten a day after it came or its pods were last seen running."""

Running = tuple[tuple[str, str, int], ...]
"""(source, item key, GPUs) of a pool's bound pods of announced work."""


@dataclass(frozen=True)
class _Reading:
    at: int
    total_gpus: int
    announced: Running


class NoticeUse:
    """GPU-seconds of each pool's work per source and kind of notice (see the module
    docstring). ``rows``/``links`` are what a restart keeps (``reconcile.state``); the last
    reading is not: the gap over a restart is not counted."""

    def __init__(self) -> None:
        self.seconds: dict[tuple[str, str, str, int], float] = {}
        """(pool, source, kind, UTC day) -> GPU-seconds; source ``""`` kind ``all``: the pool's."""
        self.links: dict[tuple[str, str], tuple[str, int]] = {}
        """(pool, item key) -> (``ahead``/``short``, when it came or last ran)."""
        self._last: dict[str, _Reading] = {}

    def came(self, pool: str, key: str, *, ahead: bool, at: int) -> None:
        """An announced item's pods came, with notice enough (``ahead``) or not."""
        self.links[(pool, key)] = (AHEAD if ahead else SHORT, at)

    def record(self, pool: str, *, running_gpus: int, announced: Running, now: int) -> None:
        """This reading of ``pool``: the previous one's GPUs are counted up to now."""
        last = self._last.get(pool)
        if last is not None:
            step = min(max(0, now - last.at), MAX_STEP_SECONDS)
            day = last.at // DAY_SECONDS
            self._add((pool, "", ALL, day), last.total_gpus * step)
            for source, key, gpus in last.announced:
                link = self.links.get((pool, key))
                self._add((pool, source, link[0] if link else UNMEASURED, day), gpus * step)
        for _, key, _ in announced:
            link = self.links.get((pool, key))
            if link is not None:
                self.links[(pool, key)] = (link[0], now)
        self._last[pool] = _Reading(now, running_gpus, announced)
        self._forget(now)

    def _add(self, key: tuple[str, str, str, int], gpu_seconds: float) -> None:
        if gpu_seconds > 0:
            self.seconds[key] = self.seconds.get(key, 0.0) + gpu_seconds

    def _forget(self, now: int) -> None:
        first = now // DAY_SECONDS - WINDOW_DAYS + 1
        self.seconds = {k: v for k, v in self.seconds.items() if k[3] >= first}
        self.links = {k: v for k, v in self.links.items() if now - v[1] <= LINK_KEPT_SECONDS}

    def gpu_hours(self, pool: str, *, now: int) -> dict[tuple[str, str], float]:
        """(source, kind) -> GPU-hours of ``pool`` over the window ending ``now``; the pool's
        total under ``("", "all")``."""
        first = now // DAY_SECONDS - WINDOW_DAYS + 1
        out: dict[tuple[str, str], float] = {}
        for (name, source, kind, day), seconds in self.seconds.items():
            if name == pool and day >= first:
                out[(source, kind)] = out.get((source, kind), 0.0) + seconds / 3600
        return out

    def saved(self) -> UseTotals:
        """What a restart keeps."""
        return UseTotals(dict(self.seconds), dict(self.links))

    def restore(self, totals: UseTotals) -> None:
        """The totals and links ``saved`` kept."""
        self.seconds, self.links = dict(totals.seconds), dict(totals.links)


@dataclass(frozen=True)
class UseTotals:
    """``NoticeUse``'s totals and links, as a restart keeps them (``reconcile.state``)."""

    seconds: Mapping[tuple[str, str, str, int], float] = field(default_factory=dict)
    links: Mapping[tuple[str, str], tuple[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class PoolNotice:
    """One source's announced work on one pool over the last 7 days."""

    pool: str
    source: str
    gpu_hours: Mapping[str, float]
    """Kind of notice (``ahead``/``short``/``unmeasured``) -> GPU-hours its pods ran."""
    pool_gpu_hours: float
    """GPU-hours every real pod of the pool ran (the share's denominator)."""
    precision: float | None
    """Of this source's items on this pool resolved in 7 days, the share that came."""
    resolved: int
    notice_seconds: tuple[float, float, float] | None
    """P10, median, P90 of the notice its items that came gave (None: none came)."""

    @property
    def ahead_share(self) -> float | None:
        """Share of the pool's GPU-hours that came with notice of at least its lead time."""
        if self.pool_gpu_hours <= 0:
            return None
        return self.gpu_hours.get(AHEAD, 0.0) / self.pool_gpu_hours


def spread(values: Iterable[float]) -> tuple[float, float, float] | None:
    """P10, median, P90 by nearest rank (None: no values)."""
    ordered = sorted(values)
    if not ordered:
        return None
    last = len(ordered) - 1
    return tuple(ordered[round(q * last)] for q in (0.1, 0.5, 0.9))  # type: ignore[return-value]
