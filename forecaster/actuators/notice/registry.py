"""Every notice source by the name the config uses (``notice.sources``).

A new source is one module (a ``base.NoticeSource``) and one ``register_source`` call: the
settings, the daemon's reader, ``doctor``, the RBAC the chart grants and the twin (for a source
with a ``TwinNotice``) then know it by name (``docs/extending.md``).
"""

from __future__ import annotations

from forecaster.actuators.notice.argo import ArgoWorkflowSource
from forecaster.actuators.notice.base import NoticeSource
from forecaster.actuators.notice.cronjobs import CronJobSource
from forecaster.actuators.notice.cronworkflows import CronWorkflowSource
from forecaster.actuators.notice.jobsets import JobSetSource
from forecaster.actuators.notice.kueue_pending import KueuePendingSource
from forecaster.actuators.notice.kueue_reserved import KueueReservedSource
from forecaster.actuators.notice.volcano import VolcanoSource
from forecaster.errors import ConfigError
from forecaster.registry import NOTICE_SOURCE, Registry

SOURCES: Registry[NoticeSource] = Registry(NOTICE_SOURCE)


def register_source(source: NoticeSource) -> None:
    """Make ``source`` a notice source under its ``name``."""
    if not source.name or "/" in source.name:
        raise ConfigError(f"notice source {source.name!r}: a name, without '/', is needed")
    SOURCES.register(source.name, source)


for _source in (
    CronJobSource(),
    JobSetSource(),
    KueueReservedSource(),
    KueuePendingSource(),
    ArgoWorkflowSource(),
    CronWorkflowSource(),
    VolcanoSource(),
):
    register_source(_source)
