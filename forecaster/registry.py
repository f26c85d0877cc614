"""Things by the name the config uses: prewarm backends, notice sources, replay policies, models
and signals are each a ``Registry``, and a new one is one module plus one ``register`` call.

The settings check a name (``known``, ``check``) without importing the adapter behind it - loading
a config must not load the Kubernetes client: the built-in names of each kind are declared here
(``BUILT_IN``) and their modules register their entries under them when imported
(``tests/test_registry.py`` checks that both agree); a plug-in's ``register`` adds its name here
too, so ``validate-config`` accepts it and names it among the known ones.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

from forecaster.errors import ConfigError

T = TypeVar("T")

BACKEND = "prewarm backend"
NOTICE_SOURCE = "notice source"
REPLAY_POLICY = "replay policy"
SIGNAL = "signal"
MODEL = "model"
AUTO_BACKEND = "auto"
"""Not a backend: the configured actuation that picks one per cluster (``prewarm.backends``)."""

BUILT_IN: dict[str, tuple[str, ...]] = {
    BACKEND: ("placeholders", "capacitybuffer"),
    NOTICE_SOURCE: (
        "cronjob",
        "jobset",
        "kueue",
        "kueue-pending",
        "argo",
        "cronworkflow",
        "volcano",
    ),
    REPLAY_POLICY: (
        "reactive",
        "static",
        "schedule",
        "burst",
        "burst-live",
        "predictive",
        "oracle",
        "continuation",
    ),
    SIGNAL: (),
    MODEL: (
        "persistence",
        "seasonal-naive",
        "prophet",
        "quantreg",
        "gbm",
        "ensemble",
        "calibrated",
    ),
}
"""The names each kind has before any plug-in: what a config may use whatever is imported."""
_added: dict[str, list[str]] = {}


def known(kind: str) -> tuple[str, ...]:
    """Every name of ``kind``: the built-in ones, then those plug-ins registered."""
    return BUILT_IN[kind] + tuple(_added.get(kind, ()))


def check(kind: str, name: str) -> str:
    """``name`` if it is a known ``kind``; else a ``ValueError`` naming the known ones."""
    if name not in known(kind):
        raise ValueError(f"unknown {kind} {name!r}; known: {', '.join(known(kind))}")
    return name


class Registry(Generic[T]):
    """The entries of one kind by name, in registration order (built-ins first)."""

    def __init__(self, kind: str, *, reserved: Collection[str] = ()) -> None:
        if kind not in BUILT_IN:
            raise ConfigError(f"no such kind of registry: {kind!r}")
        self.kind = kind
        self._reserved = frozenset(reserved)
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T) -> None:
        """Make ``name`` an entry; a name taken (or reserved) is refused."""
        if name in self._entries or name in self._reserved:
            raise ConfigError(f"{self.kind} {name!r} is registered already (or reserved)")
        self._entries[name] = entry
        if name not in BUILT_IN[self.kind]:
            _added.setdefault(self.kind, []).append(name)

    def get(self, name: str) -> T:
        """The entry of ``name``; a ``ConfigError`` naming the known ones when there is none."""
        try:
            return self._entries[name]
        except KeyError:
            known_names = ", ".join(self._entries)
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {known_names}") from None

    def names(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def items(self) -> Iterator[tuple[str, T]]:
        return iter(list(self._entries.items()))

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    @contextmanager
    def trial(self) -> Iterator[None]:
        """Registrations made inside are undone on leaving: a test's toy stays in its test."""
        entries, added = dict(self._entries), list(_added.get(self.kind, ()))
        try:
            yield
        finally:
            self._entries, _added[self.kind] = entries, added
