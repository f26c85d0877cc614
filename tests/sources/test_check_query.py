"""``forecaster check-query`` against the real test Prometheus: is the pool's query right and is
there history enough to train on?

Cases: a good query prints one series, its last value, the days of history and the last day's
quality, exit 0; a query that returns several series, or PromQL Prometheus rejects, is named in
one line and exits 1; with 10 days at hand and a 14-day minimum the short history is reported; a
Prometheus that keeps 10 days (its own retention flag) is reported as too short for 28 days of
training; with an operating point, a pod history that finds no pod while GPUs are requested is
reported (the choice then replays the demand level); ``doctor`` reports the same findings.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from forecaster.cli import main
from forecaster.core.series import DemandSeries, iso_utc
from forecaster.durations import DAY
from forecaster.testing.prometheus_server import Series, running_prometheus
from tests.conftest import KSM_START

NOW = int(time.time()) // 3600 * 3600  # retention is applied relative to the newest data


def _config(tmp_path: Path, url: str, query: str, **forecast: object) -> Path:
    path = tmp_path / "forecaster.yaml"
    document = {
        "source": {"kind": "prometheus", "prometheus": {"url": url, "retries": 0}},
        "forecast": forecast,
        "pools": [{"name": "earth", "query": query}],
    }
    path.write_text(yaml.safe_dump(document))
    return path


def _run(config: Path, at: int, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["check-query", "--config", str(config), "--at", iso_utc(at)])
    return code, capsys.readouterr().out


def test_a_good_query_shows_series_value_history_and_quality(
    tmp_path: Path, prometheus_url: str, helios: DemandSeries, capsys: pytest.CaptureFixture[str]
) -> None:
    at = helios.start + 15 * DAY
    config = _config(tmp_path, prometheus_url, 'gpus_requested{pool="earth"}')
    code, out = _run(config, at, capsys)
    assert code == 0, out
    expected = helios.values[helios.index_of(at)]
    assert f"1 series, value {expected:g} GPUs" in out
    assert "retention 10y" in out  # 3650d as Prometheus prints it
    assert "history: 15.0 days" in out
    assert "WARN short-retention" not in out and "bad-query" not in out
    assert "last day at 60s: 1441 usable points; clean" in out


def test_short_history_is_reported(
    tmp_path: Path, prometheus_url: str, helios: DemandSeries, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, prometheus_url, 'gpus_requested{pool="earth"}')
    code, out = _run(config, helios.start + 10 * DAY, capsys)
    assert code == 0
    assert "WARN short-history [earth]: 10.0 days of history, training needs 14" in out


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("gpus_requested", "returned 4 series"),
        ("sum(gpus_requested{pool=", "rejected the query: bad_data"),
    ],
)
def test_a_bad_query_is_named_and_exits_1(  # noqa: PLR0917 (pytest passes fixtures so)
    tmp_path: Path,
    prometheus_url: str,
    helios: DemandSeries,
    capsys: pytest.CaptureFixture[str],
    query: str,
    said: str,
) -> None:
    code, out = _run(_config(tmp_path, prometheus_url, query), helios.start + 15 * DAY, capsys)
    assert code == 1
    assert "ERROR bad-query [earth]" in out and said in out


@pytest.fixture(scope="module")
def short_retention_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    now_ish = NOW
    samples = [(now_ish - 3600 * h, 8.0) for h in range(48, -1, -1)]
    series = [Series("gpus_requested", {"pool": "earth"}, samples)]
    with running_prometheus(tmp_path_factory.mktemp("short"), series, retention="10d") as url:
        yield url


def test_a_retention_shorter_than_the_training_window_is_reported(
    tmp_path: Path, short_retention_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, short_retention_url, 'gpus_requested{pool="earth"}')
    code, out = _run(config, NOW, capsys)
    assert code == 0, out
    assert "retention 10d" in out
    assert "WARN short-retention: Prometheus keeps 10d" in out and "reads 28 days" in out


def test_the_default_retention_is_read_as_15_days(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --storage.tsdb.retention.time the flag reads 0s: Prometheus keeps 15 days."""
    samples = [(NOW - 3600 * h, 8.0) for h in range(48, -1, -1)]
    series = [Series("gpus_requested", {"pool": "earth"}, samples)]
    with running_prometheus(tmp_path / "p", series, retention="0s") as url:
        code, out = _run(_config(tmp_path, url, 'gpus_requested{pool="earth"}'), NOW, capsys)
    assert code == 0, out
    assert "retention 15d" in out and "keeps 0s" not in out
    assert "WARN short-retention: Prometheus keeps 15d" in out


def test_with_an_operating_point_a_pod_history_that_finds_nothing_is_reported(
    tmp_path: Path, prometheus_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    nowhere = (
        "group by (namespace, pod) (last_over_time("
        'kube_pod_nodeselectors{nodeselector_karpenter_sh_nodepool="elsewhere"}[{window}]))'
    )
    config = tmp_path / "forecaster.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "source": {"kind": "prometheus", "prometheus": {"url": prometheus_url}},
                "operating_point": {"budget_percent": 5},
                "pools": [{"name": "gpu-a"}, {"name": "gpu-b", "pods_query": nowhere}],
            }
        )
    )
    code, out = _run(config, KSM_START + 110 * 60, capsys)
    assert code == 0, out
    assert "pod history: 4 GPU pods in the last day" in out  # gpu-a: a, b, c and e
    assert "WARN no-pod-history [gpu-b]: the pod history cannot be used: it finds no GPU pod" in out
    assert "no-pod-history [gpu-a]" not in out
