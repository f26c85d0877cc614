"""Every prewarm backend by the name the config uses (``backend``, ``planning.actuation``).

A new backend is one module (a class following ``base.PrewarmBackend``) and one
``register_backend`` call; settings, the actuator, ``cleanup``/``expire``, ``doctor`` and
``replay --backend`` then know it by name (``docs/extending.md``). The order of registration is
the order cleanup undoes them in.
"""

from __future__ import annotations

from dataclasses import dataclass

from forecaster.actuators.kube import Kube
from forecaster.actuators.prewarm.base import Maker, PrewarmBackend
from forecaster.actuators.prewarm.buffer_backend import CapacityBufferBackend
from forecaster.actuators.prewarm.placeholder_backend import PlaceholderBackend
from forecaster.core.actions import AUTOSCALER_HELD, PLACEHOLDER_PODS, PrewarmConduct
from forecaster.registry import AUTO_BACKEND, BACKEND, Registry


@dataclass(frozen=True)
class _Entry:
    make: Maker
    conduct: PrewarmConduct


BACKENDS: Registry[_Entry] = Registry(BACKEND, reserved=(AUTO_BACKEND,))


def register_backend(name: str, make: Maker, *, conduct: PrewarmConduct) -> None:
    """Make ``name`` a prewarm backend: ``make(kube, namespace, priority_class)`` builds it,
    ``conduct`` says how its capacity behaves once held (what replay simulates)."""
    BACKENDS.register(name, _Entry(make, conduct))


register_backend(PlaceholderBackend.name, PlaceholderBackend.make, conduct=PLACEHOLDER_PODS)
register_backend(CapacityBufferBackend.name, CapacityBufferBackend.make, conduct=AUTOSCALER_HELD)


def backend_names() -> tuple[str, ...]:
    """The registered backends, in registration order."""
    return BACKENDS.names()


def backend_conduct(name: str) -> PrewarmConduct:
    """How ``name``'s capacity behaves once held (for the twin)."""
    return BACKENDS.get(name).conduct


def make_backend(name: str, kube: Kube, namespace: str, priority_class: str) -> PrewarmBackend:
    """``name`` built on ``kube`` in our ``namespace``."""
    return BACKENDS.get(name).make(kube, namespace, priority_class)


def make_backends(kube: Kube, namespace: str, priority_class: str) -> dict[str, PrewarmBackend]:
    """Every registered backend, built (cleanup undoes them all, whatever the config says)."""
    return {name: make_backend(name, kube, namespace, priority_class) for name in BACKENDS.names()}


def served_backends(
    kube: Kube, namespace: str, priority_class: str
) -> tuple[dict[str, PrewarmBackend], dict[str, str]]:
    """The backends this cluster serves, and why each other one is not served."""
    served: dict[str, PrewarmBackend] = {}
    missing: dict[str, str] = {}
    for name, backend in make_backends(kube, namespace, priority_class).items():
        why = backend.served()
        if why is None:
            served[name] = backend
        else:
            missing[name] = why
    return served, missing
