"""The only place that reads the wall clock. Everything else is handed ``now``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Source of the current time (tz-aware UTC)."""

    def now(self) -> datetime:
        """The current time."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        """``datetime.now(UTC)``."""
        return datetime.now(UTC)


class FakeClock:
    """A clock tests and simulations move by hand."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("FakeClock needs a tz-aware start time")
        self._now = start

    def now(self) -> datetime:
        """The time last set."""
        return self._now

    def set(self, moment: datetime) -> None:
        """Jump to ``moment``."""
        self._now = moment
