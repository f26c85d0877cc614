"""The one-shot commands answer at once: none loads a model library.

Each of ``pause``, ``resume``, ``doctor``, ``check-query``, ``validate-config`` and ``cleanup``
runs in a fresh interpreter (``python -m forecaster``'s ``main``) against the API double and the
session's real Prometheus; the test fails if prophet, statsmodels, scikit-learn, pandas or
matplotlib was imported by the end. ``doctor`` prints each check once (an OK line or its
findings) and exits 0 on warnings alone.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from forecaster.cli.oneshot import DOCTOR_CHECKS
from forecaster.testing.fakes import POOL, settings
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.objects import cronjob

pytestmark = pytest.mark.prometheus

HEAVY = ("prophet", "statsmodels", "sklearn", "pandas", "matplotlib")
DRIVER = f"""
import json, sys
from forecaster.cli import main
code = main(sys.argv[1:])
heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)
print("RESULT " + json.dumps({{"code": code, "heavy": heavy}}))
"""


def run(*argv: str) -> tuple[int, list[str], str]:
    """Exit code, heavy modules loaded and stdout of ``forecaster <argv>`` in a new process."""
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    result = json.loads(line.removeprefix("RESULT "))
    return result["code"], result["heavy"], done.stdout


@pytest.fixture
def config(tmp_path: Path, prometheus_url: str) -> str:
    document = settings(tmp_path).model_dump(mode="json")
    document["source"]["prometheus"]["url"] = prometheus_url
    document["source"]["prometheus"]["retries"] = 0
    document["pools"][0]["query"] = 'gpus_requested{pool="earth"}'  # 16 days of the backfill
    path = tmp_path / "c.json"
    path.write_text(json.dumps(document))
    return str(path)


@pytest.mark.parametrize(
    "argv",
    [
        ["validate-config"],
        ["helm-values"],
        ["check-query"],
        ["doctor"],
        ["pause", "--reason", "incident"],
        ["resume"],
        ["cleanup", "--namespace", "forecaster"],
    ],
    ids=lambda argv: argv[0],
)
def test_one_shot_commands_load_no_model_library(
    argv: list[str], config: str, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    extra = ["--config", config]
    if argv[0] in ("doctor", "pause", "resume", "cleanup"):
        extra += ["--kube-host", api.url]
    if argv[0] == "cleanup":
        extra = ["--kube-host", api.url]
    code, heavy, out = run(*argv, *extra)
    assert heavy == [], out
    assert code == 0, out


def test_doctor_prints_each_check_once_and_exits_0_on_warnings(
    config: str, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    api.put("cronjobs", cronjob(pool=POOL))
    code, _, out = run("doctor", "--config", config, "--kube-host", api.url)
    lines = out.splitlines()
    assert any(  # the notice sources and what they announce now
        x.startswith("notice cronjob: 1 item(s) announced; soonest: cronjob ml/nightly@")
        for x in lines
    ), out
    named = [re.match(r"(OK|WARN|ERROR) ([a-z-]+)", x) for x in lines]
    found = [(m.group(1), m.group(2)) for m in named if m]
    assert [code for _, code in found] == list(DOCTOR_CHECKS), out  # each once, in order
    assert f"WARN unprotected-gpu-workloads [{POOL}]" in out
    assert any(x.startswith("OK cluster-autoscaler") for x in lines)
    assert "WARN short-history" in out  # the backfill is years old
    assert code == 0 and not any(x.startswith("ERROR ") for x in lines)
