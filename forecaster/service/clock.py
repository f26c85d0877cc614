"""The only place that reads the wall clock. Everything else is handed ``now``."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Source of the current time (tz-aware UTC) and of elapsed time (monotonic seconds).

    Deadlines that guard writes (leadership) use ``monotonic``: it never jumps with the wall
    clock, so a skewed or stepped wall clock cannot extend them.
    """

    def now(self) -> datetime:
        """The current time."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary start; never goes back."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        """``datetime.now(UTC)``."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()


class FakeClock:
    """A clock tests and simulations move by hand.

    ``set`` moves the wall clock; moving it forward also lets that much monotonic time pass
    (a backward move passes none). ``step_wall`` moves only the wall clock (skew, NTP steps);
    ``advance`` lets time pass on both.
    """

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("FakeClock needs a tz-aware start time")
        self._now = start
        self._monotonic = 0.0

    def now(self) -> datetime:
        """The time last set."""
        return self._now

    def monotonic(self) -> float:
        """Elapsed seconds since the clock was made."""
        return self._monotonic

    def set(self, moment: datetime) -> None:
        """Jump to ``moment``."""
        self._monotonic += max(0.0, (moment - self._now).total_seconds())
        self._now = moment

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass."""
        self.set(self._now + timedelta(seconds=seconds))

    def step_wall(self, seconds: float) -> None:
        """Move only the wall clock (monotonic time does not pass)."""
        self._now += timedelta(seconds=seconds)
