"""The daemon's persisted state: read once, failing closed; saved when due or a mode changed.

The state holds the GPU-hours spent in the last day, each pool's error budget and the notice
ledger. A state that cannot be read is never replaced by a fresh one (that would forget the
spend): the tick acts as if the GPU-hours budget were spent until it can be read. A save that
meets another writer's state re-reads it rather than overwriting it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from forecaster.core.planner import Mode
from forecaster.errors import ConflictError, ForecasterError
from forecaster.reconcile.records import TickError
from forecaster.reconcile.state import ServiceState, StateStore

log = logging.getLogger("forecaster.reconcile.loop")  # the tick's lines, under one logger


class UnreadableStateError(Exception):
    """The persisted state could not be read (said in the tick's errors and to the store)."""


def read_state(store: StateStore, errors: list[TickError], *, now: int) -> ServiceState | None:
    """The persisted state, ``None`` when none was saved yet; raises ``UnreadableStateError`` when
    it is damaged, newer than this version or lost after an earlier leader."""
    try:
        saved = store.load()
        state = None if saved is None else ServiceState.from_dict(saved)
    except (ForecasterError, ValueError, KeyError, TypeError, AttributeError) as exc:
        message = (
            f"could not read the persisted state ({exc}): acting as if the GPU-hours budget"
            " were spent until it can be read"
        )
        errors.append(TickError("state", None, message))
        log.error("%s", message)
        store.refused(message, now=now)
        raise UnreadableStateError(message) from exc
    for name, pool_state in (state.pools if state else {}).items():
        if pool_state.budget.mode != Mode.PREDICTIVE:
            log.warning(
                "pool %s: restored %s since %s: %s",
                name,
                pool_state.budget.mode,
                pool_state.budget.since,
                pool_state.budget.reason,
            )
    return state


@dataclass
class Saves:
    """When the state was last persisted, and each pool's mode in it."""

    at: int | None = None
    modes: dict[str, Mode] = field(default_factory=dict)

    def due(self, modes: dict[str, Mode], *, now: int, every: int) -> bool:
        """Save now: never saved since read, ``every`` seconds passed, or a mode changed (a
        hand-off is not left to the next scheduled save)."""
        return self.at is None or now - self.at >= every or modes != self.modes


def save_state(
    store: StateStore,
    state: ServiceState,
    saves: Saves,
    errors: list[TickError],
    *,
    now: int,
    every: int,
) -> bool:
    """Persist ``state`` when due (``Saves.due``); False when it changed under us (another
    leader?): the caller re-reads it before acting again."""
    modes = {name: p.budget.mode for name, p in state.pools.items()}
    if not saves.due(modes, now=now, every=every):
        return True
    try:
        store.save(state.to_dict())
        saves.at, saves.modes = now, modes
    except ConflictError as exc:
        message = f"state changed under us (another leader?): re-reading it: {exc}"
        errors.append(TickError("state", None, message))
        log.error("%s", message)
        return False
    except ForecasterError as exc:
        errors.append(TickError("state", None, f"could not save state: {exc}"))
        log.error("could not save state: %s", exc)
    return True
