"""What the observer takes of the work announced before its pods exist - a port, so that
``observe/`` and ``notice/`` stay independent (the wiring hands the observer the notice reader,
``actuators.notice.base.NoticeReader``, which answers it).

The observer needs of a reading: the items per pool, how each source fared, the objects skipped,
and which announced item a pod is of (its pods are then judged as that item's, not as
unannounced work)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from forecaster.actuators.attribution import NodePoolShape
from forecaster.actuators.kube import Kube
from forecaster.actuators.manifests import Pod
from forecaster.core.cluster import Skipped
from forecaster.core.notice import AnnouncedItem, SourceStatus


class AnnouncedWork(Protocol):
    """One reading of the announced work (``NoticeReading`` is one)."""

    @property
    def items(self) -> Mapping[str, tuple[AnnouncedItem, ...]]: ...

    @property
    def statuses(self) -> tuple[SourceStatus, ...]: ...

    @property
    def skipped(self) -> tuple[Skipped, ...]: ...

    def announcement(self, pod: Pod) -> tuple[str, str] | None:
        """(source, item key) of the announced work ``pod`` is of; None: unannounced work."""
        ...


class Named(Protocol):
    @property
    def name(self) -> str: ...


class NoticePort(Protocol):
    """Reads the announced work of ``pools`` (``NoticeReader`` is one)."""

    @property
    def sources(self) -> Sequence[Named]: ...

    def read(
        self,
        kube: Kube,
        *,
        pools: Sequence[NodePoolShape],
        now: int,
        resources: Mapping[str, str],
        node_units: Mapping[str, int],
    ) -> AnnouncedWork: ...


@dataclass(frozen=True)
class NotRead:
    """No announced work this time: none configured, or the reader failed (``statuses`` say
    so); every pod is unannounced work."""

    statuses: tuple[SourceStatus, ...] = ()
    items: Mapping[str, tuple[AnnouncedItem, ...]] = field(default_factory=dict)
    skipped: tuple[Skipped, ...] = ()

    def announcement(self, pod: Pod) -> tuple[str, str] | None:
        return None
