"""What the daemon must remember across ticks and restarts, as plain JSON-able data.

Per pool: the error-budget state (so a restart does not forget a hand-off in progress) and the
forecasts still waiting for their target time to be scored. Globally: the prewarm spend ledger
(the GPU-hours/day budget must survive restarts too), the time of the last tick, and how the
notice sources' announced items ended (a restart must not trust a source again that announced
work that never came). A notice section that is there but cannot be read fails the whole state
closed, like a damaged ledger: read as empty, it would trust a source again that had been cut.
Stored by a ``StateStore``: a ConfigMap in the cluster, or memory (dry-run, tests, replay).
"""

from __future__ import annotations

import functools
import math
import zlib
from dataclasses import dataclass, field
from typing import Any, Protocol

from forecaster.core.budget import SpendLedger
from forecaster.core.error_budget import ErrorBudgetState
from forecaster.core.notice import AnnouncedItem, InFlight, Outcome
from forecaster.core.notice_use import UseTotals
from forecaster.core.planner import Mode
from forecaster.reconcile import in_flight_codec

FORMAT_VERSION = 5
"""5: the notice items in flight stored as deflated columns (``in_flight_codec``); 4: each
notice outcome and item in flight names its namespace (trust is judged per source and
namespace); 3: per-minute tallies and pending forecasts stored as delta-coded columns
(``_pack``) so the state of 150 pools fits a ConfigMap's 1 MiB; 2: the ledger carries its own
clock (``{"clock", "last_seen", "buckets"}``); format 1 (a bare bucket list keyed by wall
time). All are read; a newer one fails closed."""


class StateFormatError(ValueError):
    """The persisted state cannot be trusted as a whole (empty, newer, or the wrong shape): the
    daemon acts as if the GPU-hours budget were spent until an operator resets it."""


@dataclass(frozen=True)
class PendingForecast:
    """A P95 made at ``origin`` for ``target_time``, to be scored when that time has data."""

    origin: int
    target_time: int
    upper_gpus: float
    peak: bool = False
    """A forecast of the peak over (origin, target_time] (``forecasting.arrivals``), scored
    against the highest demand seen in it; else of the demand at ``target_time``."""


@dataclass
class PoolState:
    """Per-pool memory."""

    budget: ErrorBudgetState = field(default_factory=ErrorBudgetState)
    pending: list[PendingForecast] = field(default_factory=list)


@dataclass
class ServiceState:
    """Everything persisted."""

    pools: dict[str, PoolState] = field(default_factory=dict)
    ledger: SpendLedger = field(default_factory=SpendLedger)
    last_tick: int | None = None
    notice: tuple[Outcome, ...] = ()
    """The notice ledger's resolved items (``core.notice.NoticeLedger.outcomes``), the newest
    ``MAX_NOTICE_OUTCOMES`` kept; their keys are not stored."""
    notice_in_flight: tuple[InFlight, ...] = ()
    """The announced items followed but not resolved yet (``NoticeLedger.saved``)."""
    notice_use: UseTotals = field(default_factory=UseTotals)
    """GPU-hours of each pool's work per notice source and day, and the links of the pods
    running now to their items (``core.notice_use``)."""

    def pool(self, name: str) -> PoolState:
        """The pool's state, created on first use (and only then: read several times a tick)."""
        found = self.pools.get(name)
        return found if found is not None else self.pools.setdefault(name, PoolState())

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "format_version": FORMAT_VERSION,
            "last_tick": self.last_tick,
            "ledger": {
                "clock": self.ledger.clock,
                "last_seen": self.ledger.last_seen,
                "buckets": [list(b) for b in self.ledger.buckets],
            },
            "pools": {name: _pool_dict(p) for name, p in self.pools.items()},
            "notice": _notice_dict(self.notice[-MAX_NOTICE_OUTCOMES:]),
            "notice_in_flight": in_flight_codec.encode(self.notice_in_flight),
            "notice_use": _use_dict(self.notice_use),
        }

    @classmethod
    def from_dict(cls, data: Any) -> ServiceState:
        """Inverse of ``to_dict``. Raises ``StateFormatError`` for a state that is empty, of a
        newer format or the wrong shape - never read as "nothing spent yet"."""
        if not isinstance(data, dict) or not data:
            raise StateFormatError("the persisted state is empty")
        version = data.get("format_version", 1)
        if not isinstance(version, int) or isinstance(version, bool):
            raise StateFormatError(f"state format_version {version!r} is not a number")
        if version > FORMAT_VERSION:
            raise StateFormatError(
                f"state format {version} is newer than this version reads ({FORMAT_VERSION}):"
                " written by a newer forecaster"
            )
        pools, ledger, last_tick = data.get("pools"), data.get("ledger"), data.get("last_tick")
        if not isinstance(pools, dict) or not isinstance(ledger, dict | list):
            raise StateFormatError("the persisted state lacks its pools or ledger")
        if last_tick is not None and (
            not isinstance(last_tick, int) or isinstance(last_tick, bool)
        ):
            raise StateFormatError(f"state last_tick {last_tick!r} is not a time")
        try:
            ledger_state = _ledger(ledger, last_tick=last_tick)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise StateFormatError(f"the persisted ledger is unreadable ({exc})") from exc
        return cls(
            pools={name: _pool_state(p, now=last_tick) for name, p in pools.items()},
            ledger=ledger_state,
            last_tick=last_tick,
            notice=_notice_outcomes(data.get("notice")),
            notice_in_flight=_in_flight(data.get("notice_in_flight")),
            notice_use=_use(data.get("notice_use")),
        )


MAX_NOTICE_OUTCOMES = 2000
"""Resolved announced items kept across restarts (the newest): about 60 KiB of the ConfigMap."""


def _notice_dict(outcomes: tuple[Outcome, ...]) -> dict[str, Any]:
    """Outcomes as packed rows, their sources, pools and namespaces by index into name lists."""
    sources = sorted({o.source for o in outcomes})
    pools = sorted({o.pool for o in outcomes})
    namespaces = sorted({o.namespace for o in outcomes})
    source_at = {name: i for i, name in enumerate(sources)}
    pool_at = {name: i for i, name in enumerate(pools)}
    namespace_at = {name: i for i, name in enumerate(namespaces)}
    rows = [
        [
            o.at,
            source_at[o.source],
            pool_at[o.pool],
            int(o.came),
            round(o.held_gpu_hours, 3),
            o.gpus,
            o.notice_seconds,
            int(o.ahead),
            namespace_at[o.namespace],
        ]
        for o in sorted(outcomes, key=lambda o: o.at)
    ]
    return {"sources": sources, "pools": pools, "namespaces": namespaces, "rows": _pack(rows)}


def _notice_outcomes(data: Any) -> tuple[Outcome, ...]:
    """Inverse of ``_notice_dict``; none saved (an older state): none, as after a restart before
    they were kept. Unreadable: ``StateFormatError`` (fail closed, see the module docstring)."""
    if data is None:
        return ()
    try:
        sources, pools = list(data["sources"]), list(data["pools"])
        namespaces = list(data.get("namespaces") or [""])  # format 3 kept none: ""
        return tuple(_outcome(row, sources, pools, namespaces) for row in _unpack(data["rows"]))
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
        raise StateFormatError(f"the persisted notice outcomes are unreadable ({exc})") from exc


def _outcome(row: list[Any], sources: list[Any], pools: list[Any], names: list[Any]) -> Outcome:
    """One packed outcome row (format 3: 8 columns; 4: its namespace's index last)."""
    at, source, pool, came, held, gpus, notice, ahead, *rest = row
    if len(rest) > 1:
        raise ValueError(f"an outcome row of {len(row)} columns")
    return Outcome(
        source=str(sources[int(source)]),
        pool=str(pools[int(pool)]),
        key="",
        came=bool(came),
        at=int(at),
        held_gpu_hours=float(held),
        gpus=int(gpus),
        notice_seconds=int(notice),
        ahead=bool(ahead),
        namespace=str(names[int(rest[0])] if rest else ""),
    )


def _in_flight(data: Any) -> tuple[InFlight, ...]:
    """The items in flight: deflated columns (format 5, ``in_flight_codec``), or a list of
    one object per item (formats 3 and 4, read on upgrade); none saved (an older state): none -
    their items are read again, their notice then measured from the restart. Unreadable:
    ``StateFormatError`` (their held GPU-hours would go uncharged)."""
    if data is None:
        return ()
    try:
        if isinstance(data, dict):
            return in_flight_codec.decode(data)
        return tuple(
            InFlight(
                AnnouncedItem(
                    str(d["pool"]),
                    int(d["gpus_per_pod"]),
                    int(d["pods"]),
                    bool(d["gang"]),
                    int(d["earliest"]),
                    int(d["latest"]),
                    str(d["source"]),
                    str(d["key"]),
                    bool(d.get("in_history", False)),
                    str(d.get("namespace", "")),
                ),
                None if d["due_since"] is None else int(d["due_since"]),
                int(d["first_seen"]),
            )
            for d in data
        )
    except (AttributeError, KeyError, TypeError, ValueError, IndexError, zlib.error) as exc:
        raise StateFormatError(
            f"the persisted notice items in flight are unreadable ({exc})"
        ) from exc


MAX_NOTICE_LINKS = 500
"""Links of running pods to their items kept across restarts (the newest); past them a pod's
GPU-hours count as announced with notice unmeasured."""


def _use_dict(use: UseTotals) -> dict[str, Any]:
    seconds = [[*key, round(value)] for key, value in sorted(use.seconds.items())]
    newest = sorted(use.links.items(), key=lambda kv: kv[1][1])[-MAX_NOTICE_LINKS:]
    return {"seconds": seconds, "links": [[*key, *link] for key, link in newest]}


def _use(data: Any) -> UseTotals:
    """Inverse of ``_use_dict``; none saved (an older state): none - the last 7 days' notice
    figures start again. Unreadable: ``StateFormatError``."""
    if data is None:
        return UseTotals()
    try:
        return UseTotals(
            {(str(p), str(s), str(k), int(d)): float(v) for p, s, k, d, v in data["seconds"]},
            {(str(p), str(key)): (str(k), int(at)) for p, key, k, at in data["links"]},
        )
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise StateFormatError(f"the persisted notice use is unreadable ({exc})") from exc


def _pool_dict(pool: PoolState) -> dict[str, Any]:
    """One pool's state in the compact format 3."""
    budget = pool.budget.to_dict()
    budget["points"] = _pack(budget["points"])
    budget["waste"] = _pack([[t, round(v, 4)] for t, v in budget["waste"]])
    pending = [
        [f.origin, f.target_time - f.origin, round(f.upper_gpus, 3), int(f.peak)]
        for f in pool.pending
    ]
    return {"budget": budget, "pending": _pack(pending)}


def _pack(rows: list[list[Any]]) -> dict[str, Any]:
    """Rows of (time, values...) as columns, times delta-coded in units of their common step:
    ``{"s": step, "t": [t0 / step, dt1 / step, ...], "c": [[v...], ...]}`` - a day of 5-minute
    tallies is then mostly ``1``s and short repeated numbers."""
    times = [int(r[0]) for r in rows]
    deltas = [b - a for a, b in zip([0, *times], times, strict=False)]
    step = functools.reduce(math.gcd, deltas, 0) or 1
    width = len(rows[0]) - 1 if rows else 0
    return {
        "s": step,
        "t": [d // step for d in deltas],
        "c": [[r[i + 1] for r in rows] for i in range(width)],
    }


def _unpack(packed: Any) -> list[list[Any]]:
    """Inverse of ``_pack``; a list is format 2's rows, returned as they are."""
    if isinstance(packed, list):
        return [list(r) for r in packed]
    step, times, t = int(packed["s"]), [], 0
    for delta in packed["t"]:
        t += int(delta) * step
        times.append(t)
    columns = packed["c"]
    if any(len(c) != len(times) for c in columns):
        raise ValueError("columns of unequal length")
    return [[t, *(c[i] for c in columns)] for i, t in enumerate(times)]


def _pool_state(data: Any, *, now: Any) -> PoolState:
    """One pool's saved state; a damaged entry hands that pool off (fail closed, others go on)."""
    try:
        budget = dict(data["budget"])
        budget["points"] = _unpack(budget["points"])
        budget["waste"] = _unpack(budget["waste"])
        packed = not isinstance(data["pending"], list)
        return PoolState(
            budget=ErrorBudgetState.from_dict(budget),
            pending=[
                PendingForecast(
                    int(a), int(a) + int(b) if packed else int(b), float(c), bool(peak and peak[0])
                )
                for a, b, c, *peak in _unpack(data["pending"])
            ],
        )
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        since = int(now) if isinstance(now, int) else 0
        reason = f"persisted state of this pool is unreadable ({type(exc).__name__}: {exc})"
        return PoolState(budget=ErrorBudgetState(mode=Mode.HANDED_OFF, since=since, reason=reason))


def _ledger(data: Any, *, last_tick: int | None) -> SpendLedger:
    """The persisted ledger; format 1 kept wall-time buckets, which the ledger clock continues."""
    if isinstance(data, list):
        buckets = tuple((int(t), float(v)) for t, v in data)
        return SpendLedger(buckets, clock=last_tick, last_seen=last_tick)
    clock, seen = data.get("clock"), data.get("last_seen")
    return SpendLedger(
        tuple((int(t), float(v)) for t, v in data.get("buckets", [])),
        clock=None if clock is None else int(clock),
        last_seen=None if seen is None else int(seen),
    )


class StateStore(Protocol):
    """Where ``ServiceState`` lives between ticks."""

    def load(self) -> dict[str, Any] | None:
        """The saved state, or None if there is none yet."""
        ...

    def save(self, data: dict[str, Any]) -> None:
        """Persist ``data``."""
        ...

    def refused(self, message: str, *, now: int) -> None:
        """Say, where operators look, that the state was not read and why."""
        ...


class MemoryStateStore:
    """State kept in the process (dry-run, tests, replay)."""

    def __init__(self) -> None:
        self.data: dict[str, Any] | None = None

    def load(self) -> dict[str, Any] | None:
        """The last saved state."""
        return self.data

    def save(self, data: dict[str, Any]) -> None:
        """Keep ``data``."""
        self.data = data

    def refused(self, message: str, *, now: int) -> None:
        """Nothing to record beyond the tick's error (no cluster)."""
