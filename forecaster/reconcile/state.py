"""What the daemon must remember across ticks and restarts, as plain JSON-able data.

Per pool: the error-budget state (so a restart does not forget a hand-off in progress) and the
forecasts still waiting for their target time to be scored. Globally: the prewarm spend ledger
(the GPU-hours/day budget must survive restarts too) and the time of the last tick.
Stored by a ``StateStore``: a ConfigMap in the cluster, or memory (dry-run, tests, replay).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from forecaster.core.budget import SpendLedger
from forecaster.core.error_budget import ErrorBudgetState
from forecaster.core.planner import Mode

FORMAT_VERSION = 2
"""2: the ledger carries its own clock (``{"clock", "last_seen", "buckets"}``); format 1 (a bare
bucket list keyed by wall time) is still read."""


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

    def pool(self, name: str) -> PoolState:
        """The pool's state, created on first use."""
        return self.pools.setdefault(name, PoolState())

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
            "pools": {
                name: {
                    "budget": p.budget.to_dict(),
                    "pending": [
                        [f.origin, f.target_time, f.upper_gpus, *([True] if f.peak else [])]
                        for f in p.pending
                    ],
                }
                for name, p in self.pools.items()
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServiceState:
        """Inverse of ``to_dict``; a newer format is refused rather than misread."""
        if int(data.get("format_version", 0)) > FORMAT_VERSION:
            raise ValueError(f"state format {data['format_version']} is newer than supported")
        return cls(
            pools={
                name: _pool_state(p, now=data.get("last_tick"))
                for name, p in data.get("pools", {}).items()
            },
            ledger=_ledger(data.get("ledger", []), last_tick=data.get("last_tick")),
            last_tick=data.get("last_tick"),
        )


def _pool_state(data: Any, *, now: Any) -> PoolState:
    """One pool's saved state; a damaged entry hands that pool off (fail closed, others go on)."""
    try:
        return PoolState(
            budget=ErrorBudgetState.from_dict(data["budget"]),
            pending=[
                PendingForecast(int(a), int(b), float(c), bool(peak and peak[0]))
                for a, b, c, *peak in data["pending"]
            ],
        )
    except (KeyError, TypeError, ValueError) as exc:
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
