"""What a prewarm backend is: the one interface the actuator, cleanup, doctor and replay use.

A backend holds a pool's prewarm in some cluster object and answers five questions about it:
is it served here (``served``), how does it converge to a target and withdraw
(``converge``/``withdraw``), which GPUs does it hold that no pod of ours shows (``held_gpus``:
the ledger charges them), how is it undone without the config (``uninstall``/``settle``), and
what expires without us (``expire``: whatever the cluster does not end by itself;
``still_held``: when each object ends). How its capacity behaves once held is its
``conduct``, declared at registration (``registry.register_backend``) for the twin.

Whatever a backend creates carries our labels (``actuators.labels``), is found by them, never
through the config's pool list, and ends by a deadline the cluster or the expiry CronJob
enforces.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from forecaster.actuators.kube import Kube
from forecaster.actuators.prewarm.placeholders import Applied, PlaceholderSpec
from forecaster.actuators.undo import Undone


@dataclass(frozen=True)
class Prewarm:
    """What one pool's backend is asked to hold this tick."""

    spec: PlaceholderSpec
    """The shape of one chunk (GPUs, node selector, TTL)."""
    units: int
    images: tuple[str, ...]
    """What the pool's pods ran, for a backend that pulls them ahead."""
    limit_gpus: int | None
    """A server-side cap, for a backend whose object carries one."""
    now: int


class PrewarmBackend(Protocol):
    """One way of holding prewarm (see the module docstring)."""

    name: str

    def served(self) -> str | None:
        """None where the cluster serves this backend; else why not, in one line."""
        ...

    def converge(self, asked: Prewarm) -> Applied:
        """Hold what ``asked`` says until its ``now`` + the chunk's TTL."""
        ...

    def withdraw(self, spec: PlaceholderSpec, *, now: int) -> Applied:
        """Hold nothing for ``spec``'s pool (another backend takes over)."""
        ...

    def status(self, pool: str) -> str | None:
        """What the cluster reports on the pool's prewarm object, if the backend has one."""
        ...

    def held_gpus(self) -> Mapping[str, int]:
        """GPUs held per pool that no pod of ours shows (pods are counted on their nodes)."""
        ...

    def uninstall(self, undone: Undone) -> None:
        """Withdraw everything of ours, each object on its own (``forecaster cleanup``)."""
        ...

    def settle(self, undone: Undone, sleep: Callable[[float], None]) -> None:
        """After the NodePools are restored: remove what had to drain first (bounded wait)."""
        ...

    def expire(self, undone: Undone, *, now: int) -> None:
        """Undo what outlived its deadline and that the cluster does not end by itself."""
        ...

    def still_held(self) -> list[str]:
        """One line per pool still held, and when it ends without the daemon."""
        ...


Maker = Callable[[Kube, str, str], PrewarmBackend]
"""Builds a backend from the client, our namespace and the placeholder PriorityClass."""
