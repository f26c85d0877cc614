"""Every notice source by the name the config uses (``notice.sources``): one entry per module."""

from __future__ import annotations

from forecaster.actuators.notice.argo import ArgoWorkflowSource
from forecaster.actuators.notice.base import NoticeSource
from forecaster.actuators.notice.cronjobs import CronJobSource
from forecaster.actuators.notice.cronworkflows import CronWorkflowSource
from forecaster.actuators.notice.jobsets import JobSetSource
from forecaster.actuators.notice.kueue_pending import KueuePendingSource
from forecaster.actuators.notice.kueue_reserved import KueueReservedSource
from forecaster.actuators.notice.volcano import VolcanoSource

SOURCES: dict[str, NoticeSource] = {
    CronJobSource.name: CronJobSource(),
    JobSetSource.name: JobSetSource(),
    KueueReservedSource.name: KueueReservedSource(),
    KueuePendingSource.name: KueuePendingSource(),
    ArgoWorkflowSource.name: ArgoWorkflowSource(),
    CronWorkflowSource.name: CronWorkflowSource(),
    VolcanoSource.name: VolcanoSource(),
}
