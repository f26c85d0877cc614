"""The placeholder backend: prewarm held by low-priority placeholder Jobs (``placeholders``).

Served everywhere (plain Jobs). Its pods are on nodes, so the observer counts them there and
``held_gpus`` is empty; they end by themselves (the Job's deadline and finished TTL), so expiry
has nothing to do; uninstall deletes every Job of ours by label, and the bare pods versions
before Jobs left.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from forecaster.actuators import labels
from forecaster.actuators.kube import Kube
from forecaster.actuators.manifests import Job
from forecaster.actuators.prewarm.base import Prewarm
from forecaster.actuators.prewarm.placeholders import Applied, Placeholders, PlaceholderSpec
from forecaster.actuators.undo import Undone
from forecaster.core.series import iso_utc


class PlaceholderBackend:
    """``PrewarmBackend`` over ``Placeholders``."""

    name = "placeholders"

    def __init__(self, placeholders: Placeholders) -> None:
        self.placeholders = placeholders

    @classmethod
    def make(cls, kube: Kube, namespace: str, priority_class: str) -> PlaceholderBackend:
        """The registry's maker."""
        return cls(Placeholders(kube, namespace=namespace, priority_class=priority_class))

    def served(self) -> str | None:
        return None

    def converge(self, asked: Prewarm) -> Applied:
        # new placeholders pull what the pool's pods ran (a buffer's pods are virtual)
        spec = asked.spec
        pulls = dataclasses.replace(spec, pull_images=asked.images[: spec.max_pulled_images])
        return self.placeholders.apply(pulls, target=asked.units, now=asked.now)

    def withdraw(self, spec: PlaceholderSpec, *, now: int) -> Applied:
        return self.placeholders.apply(spec, target=0, now=now)

    def status(self, pool: str) -> str | None:
        return None

    def held_gpus(self) -> Mapping[str, int]:
        return {}

    def uninstall(self, undone: Undone) -> None:
        namespace = self.placeholders.namespace
        for job in self.placeholders.jobs(None):
            name = job["metadata"]["name"]
            undone.attempt(f"placeholder Job {namespace}/{name}", _deleting(self.placeholders, job))
        undone.attempt("bare placeholder pods", lambda: _legacy_pods(self.placeholders))

    def settle(self, undone: Undone, sleep: Callable[[float], None]) -> None:
        return None

    def expire(self, undone: Undone, *, now: int) -> None:
        return None  # Jobs with deadlines end by themselves

    def still_held(self) -> list[str]:
        by_pool: dict[str, list[tuple[int, int]]] = {}
        for job in self.placeholders.jobs(None):
            meta = job["metadata"]
            notes = meta.get("annotations") or {}
            created = int(notes.get(labels.CREATED_AT, 0))
            ends = created + int(job["spec"].get("activeDeadlineSeconds") or 0)
            pool = (meta.get("labels") or {}).get(labels.POOL, "?")
            by_pool.setdefault(pool, []).append((int(notes.get(labels.GPUS, 0)), ends))
        return [
            f"pool {pool}: {len(jobs)} placeholder Job(s), {sum(g for g, _ in jobs)} GPUs, the"
            f" last ending by {iso_utc(max(e for _, e in jobs))} without the daemon"
            for pool, jobs in sorted(by_pool.items())
        ]


def _deleting(placeholders: Placeholders, job: Job) -> Callable[[], str]:
    return lambda: f"deleted placeholder {placeholders.delete(job)}"


def _legacy_pods(placeholders: Placeholders) -> str | None:
    removed = placeholders.remove_bare_pods()
    return f"deleted bare placeholder pods {', '.join(removed)}" if removed else None
