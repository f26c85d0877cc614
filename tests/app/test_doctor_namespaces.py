"""``doctor`` names the namespaces whose announced work held the most prewarm, from the
daemon's saved state: GPU-hours held, of them for items that did not come, precision."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from forecaster.cli import main
from forecaster.core.notice import Outcome
from forecaster.reconcile.state import ServiceState
from forecaster.testing.fakes import POOL, settings
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import HOME


def test_doctor_lists_the_namespaces_whose_notice_held_the_most(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = settings(tmp_path)
    path = tmp_path / "forecaster.yaml"
    path.write_text(yaml.safe_dump(config.model_dump(mode="json")))
    now = int(time.time())  # doctor judges the last 7 days as of now
    with KubeApiDouble() as api:
        ClusterSim(api).busy_pool(POOL)
        outcomes = (
            Outcome("cronjob", POOL, "a", False, now - 600, 30.0, namespace="no-quota"),
            Outcome("cronjob", POOL, "b", True, now - 600, 4.0, namespace="ml"),
        )
        state = ServiceState(last_tick=now, notice=outcomes)
        api.put(
            "configmaps",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": config.state_config_map, "namespace": HOME},
                "data": {"state.json": json.dumps(state.to_dict())},
            },
        )
        main(["doctor", "--config", str(path), "--kube-host", api.url])
    out = capsys.readouterr().out
    assert (
        "notice namespace no-quota: 30.0 GPU-hours held for its announced work in 7 days (30.0"
        " for items that did not come), precision 0.00 over 1 items" in out
    )
    assert out.index("notice namespace no-quota") < out.index("notice namespace ml:")
