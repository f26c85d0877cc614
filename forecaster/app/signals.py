"""Every signal reader by name: what the daemon's observer and the twin read into each pool's
snapshot (``PoolSnapshot.signals``).

A new signal is one module (a ``SignalReader`` for the cluster, a ``TwinSignal`` for replay and
the embedded default) and one ``register_signal`` call (``docs/extending.md``); the daemon, the
status endpoint and the twin then carry it. None is built in yet: Kueue's room and the notice
sources have fields of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from forecaster.actuators.observe.signals import SignalReader
from forecaster.errors import ConfigError
from forecaster.registry import SIGNAL, Registry
from forecaster.simulation.twin import TwinSignal


@dataclass(frozen=True)
class _Signal:
    live: SignalReader
    twin: TwinSignal | None


SIGNALS: Registry[_Signal] = Registry(SIGNAL)


def register_signal(name: str, *, live: SignalReader, twin: TwinSignal | None = None) -> None:
    """Read ``name`` into every pool's snapshot: ``live`` from the cluster each tick, ``twin``
    (if given) from the twin's state in replays and the embedded default."""
    if live.name != name or (twin is not None and twin.name != name):
        raise ConfigError(f"signal {name!r}: its readers must carry the same name")
    SIGNALS.register(name, _Signal(live, twin))


def live_readers() -> tuple[SignalReader, ...]:
    """The cluster readers, in registration order (``observe(signals=...)``)."""
    return tuple(s.live for _, s in SIGNALS.items())


def twin_signals() -> tuple[TwinSignal, ...]:
    """The twin's readers, in registration order (``TwinConfig.signals``)."""
    return tuple(s.twin for _, s in SIGNALS.items() if s.twin is not None)
