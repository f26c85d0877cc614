"""Fixtures: a plain cluster (scheduler/Karpenter) on the API double, the real client on it."""

from __future__ import annotations

import pytest

from forecaster.actuators.kube import Kube, api_client
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble


@pytest.fixture
def sim(api: KubeApiDouble) -> ClusterSim:
    return ClusterSim(api, provision_seconds=60)


@pytest.fixture
def kube(api: KubeApiDouble) -> Kube:
    return Kube(api_client(host=api.url, timeout_seconds=2), dry_run=False, backoff_seconds=0.01)
