"""Reading GPU quantities and timestamps out of Kubernetes objects, and the error for an object
we cannot read.

Quantities are parsed as the API server parses them (``resource.Quantity``): ``1Ki``, ``2T``
and ``1e3`` are whole numbers it accepts and stores as written, so any tenant can put them in a
pod template; they are read as the counts they are (and are then more than a node holds), never
as an error that stops a reader. A malformed object harms only itself - the readers isolate it
per object (per pool for a NodePool or a node) - so reading it raises ``MalformedObjectError``
rather than a bare ``ValueError``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from forecaster.accelerators import GPU, is_accelerator
from forecaster.actuators.manifests import Pod, PodTemplateSpec
from forecaster.errors import ActuationError

_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<binary>[KMGTPE]i)|(?P<decimal>[numkMGTPE])|[eE](?P<exponent>[+-]?\d+))?$"
)
"""``resource.Quantity``'s grammar (k8s.io/apimachinery): a signed decimal number, then a
binary suffix (Ki..Ei), a decimal one (n u m k M G T P E) or a decimal exponent (e3, E-2)."""
_DECIMAL_EXPONENT = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_MAX_TEXT = 64
"""Longer text is no quantity anyone writes for devices: refused without parsing it."""
MAX_UNITS = 2**63 - 1
"""Any larger count is read as this: more than any node holds, without building its digits."""


class MalformedObjectError(ActuationError):
    """An object of the cluster cannot be read as expected (it harms only itself: the readers
    isolate it per object, or - a NodePool, a node - per pool)."""


class UnplaceableError(MalformedObjectError):
    """An object asks more devices per pod than one node of its pool holds: no pod of it can
    ever be placed, so it announces nothing and is no demand."""


def quantity(value: object) -> Decimal:
    """A Kubernetes quantity as the API server reads it (``1``, ``500m``, ``1Ki``, ``2T``,
    ``1e3``, a JSON number); raises ``MalformedObjectError`` for anything else."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise MalformedObjectError(f"quantity {value!r} is not a number or a string")
    if isinstance(value, float) and not math.isfinite(value):
        raise MalformedObjectError(f"quantity {value!r} is not finite")
    text = (str(value) if not isinstance(value, float) else repr(value)).strip()  # as JSON does
    match = _QUANTITY.match(text) if len(text) <= _MAX_TEXT else None
    if match is None:
        raise MalformedObjectError(
            f"quantity {str(value)[:_MAX_TEXT]!r} is not a Kubernetes quantity"
        )
    number = Decimal(match["number"])
    if match["binary"]:
        return number * Decimal(1024) ** ("KMGTPE".index(match["binary"][0]) + 1)
    if match["decimal"]:
        return number.scaleb(_DECIMAL_EXPONENT[match["decimal"]])
    if match["exponent"]:
        exponent = int(match["exponent"])  # (at most 64 characters: cheap)
        return number.scaleb(max(-(10**6), min(10**6, exponent)))
    return number


def gpu_quantity(value: object) -> int:
    """A count of accelerators (GPUs, MIG slices, Neuron devices) from a Kubernetes quantity
    (``8``, ``1k``, ``1Ki``, ``2e3``); fractions round down, counts past ``MAX_UNITS`` read as it.
    A negative count is malformed (the API server refuses negative requests)."""
    amount = quantity(value)
    if amount < 0:
        raise MalformedObjectError(f"accelerator quantity {value!r} is negative")
    return int(min(amount, Decimal(MAX_UNITS)).to_integral_value(rounding=ROUND_FLOOR))


def fits_one_node(units: int, *, node_units: int | None, what: str, pool: str) -> int:
    """``units`` (per pod) when one node of ``pool`` (``node_units`` each; None: unknown) can
    hold them; else ``UnplaceableError`` naming ``what``."""
    if node_units is not None and units > node_units:
        raise UnplaceableError(
            f"{what} asks {units} units per pod, more than one node of pool {pool} holds"
            f" ({node_units}): it can never be placed"
        )
    return units


def pod_gpus(pod: Pod | PodTemplateSpec, resource: str = GPU) -> int:
    """Units of ``resource`` (a pool's accelerator; GPUs by default) a pod (or a pod template)
    requests as the scheduler counts them: the containers' (requests, else limits) summed with
    the sidecars' (init containers that keep running), or the largest other init container's
    if that is more."""
    spec = pod["spec"]
    running = sum(_units(c, resource) for c in spec.get("containers") or [])
    largest_init = 0
    for init in spec.get("initContainers") or []:
        if init.get("restartPolicy") == "Always":
            running += _units(init, resource)
        else:
            largest_init = max(largest_init, _units(init, resource))
    return max(running, largest_init)


def _units(container: Mapping[str, Any], resource: str) -> int:
    resources = container.get("resources") or {}
    value = (resources.get("requests") or {}).get(resource)
    if value is None:
        value = (resources.get("limits") or {}).get(resource, 0)
    return gpu_quantity(value)


def accelerators(pod: Pod | PodTemplateSpec, also: Collection[str] = ()) -> dict[str, int]:
    """The accelerators a pod (or template) requests, units by resource: the known ones and
    ``also`` (the pools' configured resources) - what pool attribution and notice look at."""
    names: set[str] = set()
    spec = pod["spec"]
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        for part in (resources.get("requests") or {}, resources.get("limits") or {}):
            names.update(name for name in part if is_accelerator(name) or name in also)
    units = {name: pod_gpus(pod, name) for name in sorted(names)}
    return {name: n for name, n in units.items() if n > 0}


def timestamp_seconds(text: object) -> float:
    """Epoch seconds of a Kubernetes timestamp (``2026-01-08T00:00:00Z``)."""
    return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()


def kube_timestamp(seconds: float) -> str:
    """A Kubernetes timestamp (UTC, whole seconds) of epoch seconds: ``timestamp_seconds``'s
    inverse."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    """The object's ``status.conditions`` entry of type ``kind``, if any."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return None


def condition_true(obj: Mapping[str, Any], kind: str) -> bool:
    """Whether the object's condition ``kind`` is ``True``."""
    condition = status_condition(obj, kind)
    return condition is not None and condition.get("status") == "True"
