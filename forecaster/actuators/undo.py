"""Undoing our objects one at a time: a failure is one line against its object, the rest go on.

What uninstall and expiry (``app.cleanup``) and every prewarm backend's own withdrawal share.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from forecaster.errors import ForecasterError

log = logging.getLogger("forecaster.app.cleanup")


@dataclass
class Undone:
    """What a cleanup changed, and what it could not undo (one line per object)."""

    changed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def attempt(self, what: str, undo: Callable[[], str | None]) -> None:
        """Undo one object; a failure is recorded against ``what`` and the rest go on."""
        try:
            line = undo()
        except ForecasterError as exc:
            self.failed.append(f"{what}: {exc}")
            log.error("cleanup: %s: %s", what, exc)
            return
        except Exception as exc:  # a malformed object of ours must not stop the others
            self.failed.append(f"{what}: {type(exc).__name__}: {exc}")
            log.exception("cleanup: %s failed on an unexpected object", what)
            return
        if line:
            self.changed.append(line)
