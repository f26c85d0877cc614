"""PrometheusSource against a real Prometheus (no mocked HTTP).

Covers: exact read-back of 16 days of backfilled 1-minute data (values, timestamps, gaps), chunking
under the 11,000-point limit (any chunk size gives the same result), step alignment, the default
kube-state-metrics query (Pending + Running GPUs per NodePool, multi-container pods, phase changes),
one-line errors for bad PromQL, an unreachable server, a server that never answers, a query with
many series, and an empty result.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import numpy as np
import pytest

from forecaster.core.quality import regularize
from forecaster.errors import SourceError
from forecaster.sources.prometheus import PrometheusSource
from forecaster.testing.prometheus_server import free_port
from tests.conftest import (
    BACKFILL_DAYS,
    HELIOS,
    KSM_CREATED,
    KSM_START,
    KSM_STARTED,
    load_sample,
)

pytestmark = pytest.mark.prometheus
EARTH = {"earth": 'gpus_requested{pool="earth"}'}


def expected_helios() -> tuple[int, int, np.ndarray]:
    series, _ = load_sample(HELIOS, outage_min_seconds=0)
    part = series.window(series.start, series.start + BACKFILL_DAYS * 86400)
    return part.start, part.end, part.values


def test_reads_back_backfilled_series_exactly(prometheus_url: str) -> None:
    start, end, values = expected_helios()
    source = PrometheusSource(url=prometheus_url, queries=EARTH, outage_min_seconds=0)
    series, report = source.fetch("earth", start=start, end=end, step_seconds=60)
    assert series.start == start
    assert series.end == end
    np.testing.assert_array_equal(series.values, values)
    assert report.duplicates == 0 and report.off_grid == 0 and not report.gaps


def test_chunk_size_does_not_change_the_result(prometheus_url: str) -> None:
    start, end, _ = expected_helios()
    end = start + 3 * 86400
    big = PrometheusSource(url=prometheus_url, queries=EARTH, outage_min_seconds=0)
    small = PrometheusSource(
        url=prometheus_url, queries=EARTH, max_points_per_request=997, outage_min_seconds=0
    )
    a, _ = big.fetch("earth", start=start, end=end, step_seconds=60)
    b, _ = small.fetch("earth", start=start, end=end, step_seconds=60)
    assert len(a) == 3 * 1440 + 1
    np.testing.assert_array_equal(a.values, b.values)


def test_unaligned_range_is_aligned_to_the_step(prometheus_url: str) -> None:
    start, _, _ = expected_helios()
    source = PrometheusSource(url=prometheus_url, queries=EARTH, outage_min_seconds=0)
    series, _ = source.fetch("earth", start=start + 17, end=start + 3600 + 59, step_seconds=300)
    assert series.start == start - start % 300 and series.start % 300 == 0
    assert series.step_seconds == 300
    assert np.isfinite(series.values).all()


def test_outage_zeros_are_excluded_on_fetch(prometheus_url: str) -> None:
    start, end, _ = expected_helios()
    source = PrometheusSource(url=prometheus_url, queries=EARTH)
    series, report = source.fetch("earth", start=start, end=end, step_seconds=60)
    assert [(e - s) // 60 for s, e in report.outages] == [1445, 121]
    assert np.isnan(series.values).sum() == 1445 + 121


def test_default_query_counts_pending_and_running_gpus_per_pool(prometheus_url: str) -> None:
    source = PrometheusSource(url=prometheus_url, queries={}, outage_min_seconds=0)
    a, _ = source.fetch("gpu-a", start=KSM_START, end=KSM_START + 119 * 60, step_seconds=60)
    b, _ = source.fetch("gpu-b", start=KSM_START, end=KSM_START + 119 * 60, step_seconds=60)
    minute = np.arange(120)
    # a: 2 always; b: 4 pending then running; c: 8 until it succeeds at 60; e: 1+1 pending until 90
    expected_a = 2 + 4 + np.where(minute < 60, 8, 0) + np.where(minute < 90, 2, 0)
    np.testing.assert_array_equal(a.values, expected_a.astype(float))
    np.testing.assert_array_equal(b.values, np.ones(120))


def test_bad_promql_is_a_one_line_error_from_prometheus(prometheus_url: str) -> None:
    source = PrometheusSource(url=prometheus_url, queries={"earth": "sum(rate(foo[5m]"})
    with pytest.raises(SourceError, match=r"rejected the query: bad_data: .*parse error") as info:
        source.fetch("earth", start=KSM_START, end=KSM_START + 600, step_seconds=60)
    assert "\n" not in str(info.value)


def test_many_series_are_refused_with_advice(prometheus_url: str) -> None:
    source = PrometheusSource(url=prometheus_url, queries={"x": "kube_pod_status_phase"})
    with pytest.raises(SourceError, match=r"returned \d+ series .* sum\(\.\.\.\)"):
        source.fetch("x", start=KSM_START, end=KSM_START + 600, step_seconds=60)


def test_empty_result_names_the_pool_and_window(prometheus_url: str) -> None:
    source = PrometheusSource(url=prometheus_url, queries={"ghost": 'up{job="none"}'})
    with pytest.raises(SourceError, match=r"pool 'ghost' returned no samples between 2026-01"):
        source.fetch("ghost", start=KSM_START, end=KSM_START + 600, step_seconds=60)


def test_unreachable_server_is_a_one_line_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    source = PrometheusSource(url=url, queries=EARTH, retries=1, backoff_seconds=0.01)
    with pytest.raises(SourceError, match=rf"Prometheus {url} is unreachable") as info:
        source.fetch("earth", start=KSM_START, end=KSM_START + 600, step_seconds=60)
    assert "\n" not in str(info.value)


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP server that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def test_server_that_never_answers_times_out(silent_server: str) -> None:
    source = PrometheusSource(url=silent_server, queries=EARTH, timeout_seconds=0.3, retries=0)
    with pytest.raises(SourceError, match=r"did not answer within 0.3s"):
        source.fetch("earth", start=KSM_START, end=KSM_START + 600, step_seconds=60)


def test_regularize_matches_between_csv_and_prometheus_paths(prometheus_url: str) -> None:
    """The same cleaning applies whatever the source (outage windows are identical)."""
    start, end, values = expected_helios()
    timestamps = start + 60 * np.arange(values.size)
    _, from_csv = regularize(timestamps, values, step_seconds=60)
    source = PrometheusSource(url=prometheus_url, queries=EARTH)
    _, from_prom = source.fetch("earth", start=start, end=end, step_seconds=60)
    assert from_csv.outages == from_prom.outages


def test_arrivals_query_counts_each_created_pods_gpus_once_in_its_minute(
    prometheus_url: str,
) -> None:
    source = PrometheusSource(url=prometheus_url, queries={}, outage_min_seconds=3600)
    a, report = source.fetch_arrivals(
        "gpu-a", start=KSM_START, end=KSM_START + 110 * 60, step_seconds=60
    )
    b, _ = source.fetch_arrivals(
        "gpu-b", start=KSM_START, end=KSM_START + 110 * 60, step_seconds=60
    )
    expected_a = np.zeros(111)
    expected_a[11] = 4  # b: created at 10:20, so in (10:00, 11:00]
    expected_a[46] = 2  # e: two 1-GPU containers, created at 45:59
    expected_b = np.zeros(111)
    expected_b[31] = 1  # d: created at 30:05
    assert a.start == KSM_START
    np.testing.assert_array_equal(a.values, expected_a)  # quiet hours are zeros, not outages
    np.testing.assert_array_equal(b.values, expected_b)
    assert report.outages == ()


@pytest.mark.parametrize("window_minutes", [24 * 60, 25])  # one window; pods spanning several
def test_pod_history_has_each_pods_creation_run_time_and_gpus(
    prometheus_url: str, window_minutes: int
) -> None:
    source = PrometheusSource(
        url=prometheus_url, queries={}, pod_window_seconds=window_minutes * 60
    )
    end = KSM_START + 110 * 60
    pods = source.fetch_pods("gpu-a", start=KSM_START, end=end, step_seconds=60)
    last_step = KSM_START + 89 * 60  # e: Pending until minute 89, then Failed
    expected = [  # (created, ran for, GPUs), by creation
        (KSM_CREATED["a"], end - KSM_STARTED["a"], 2),  # still running at the end
        (KSM_CREATED["c"], KSM_START + 59 * 60 - KSM_STARTED["c"], 8),  # Succeeded at 60
        (KSM_CREATED["b"], end - KSM_STARTED["b"], 4),  # Pending until 30: runs from then
        (KSM_CREATED["e"], last_step - KSM_CREATED["e"], 2),  # two containers; never started
    ]
    got = list(zip(pods.submit.tolist(), pods.duration.tolist(), pods.gpus.tolist(), strict=True))
    assert got == [(float(c), float(d), g) for c, d, g in expected]
    other = source.fetch_pods("gpu-b", start=KSM_START, end=end, step_seconds=60)
    assert other.gpus.tolist() == [1]  # d only: pools are told apart by the node selector


def test_the_pod_history_leaves_our_own_namespace_out(prometheus_url: str) -> None:
    """Our placeholder (8 GPUs, in forecaster's namespace) is in kube-state-metrics beside the
    real pods; the history a replay and ``history export`` read leaves it out - and only
    because of the namespace exclusion (another namespace excluded: it is there)."""
    end = KSM_START + 110 * 60
    ours = PrometheusSource(url=prometheus_url, queries={})
    mine = ours.fetch_pods("gpu-a", start=KSM_START, end=end, step_seconds=60)
    assert sorted(mine.gpus.tolist()) == [2, 2, 4, 8]  # a, e, b, c
    other = PrometheusSource(url=prometheus_url, queries={}, exclude_namespaces=("elsewhere",))
    pods = other.fetch_pods("gpu-a", start=KSM_START, end=end, step_seconds=60)
    assert sorted(pods.gpus.tolist()) == [2, 2, 4, 8, 8]  # and the placeholder


def test_pod_history_before_any_pod_is_empty(prometheus_url: str) -> None:
    source = PrometheusSource(url=prometheus_url, queries={})
    pods = source.fetch_pods(
        "gpu-a", start=KSM_START - 3 * 86400, end=KSM_START - 2 * 86400, step_seconds=60
    )
    assert len(pods) == 0


def test_a_sample_stamped_outside_the_window_is_dropped_and_counted(
    prometheus_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One sample stamped 1970 (a proxy or federation gone wrong) once made a 30-million-point
    grid and a ~1.2 GB peak: it is dropped before gridding and said in the data quality."""
    start, _, values = expected_helios()
    source = PrometheusSource(url=prometheus_url, queries=EARTH, outage_min_seconds=0)
    real = source._client.custom_query_range

    def stray(*args: object, **kwargs: object) -> list[dict[str, object]]:
        result = real(*args, **kwargs)
        result[0]["values"] = [[60.0, "8"], *result[0]["values"]]  # 1970-01-01T00:01Z
        return result

    monkeypatch.setattr(source._client, "custom_query_range", stray)
    series, report = source.fetch("earth", start=start, end=start + 86400, step_seconds=60)
    assert (series.start, len(series)) == (start, 1441)
    np.testing.assert_array_equal(series.values, values[:1441])
    assert report.outside_window == 1
    assert "1 sample(s) outside the asked window dropped" in report.describe()


def test_a_span_no_history_has_is_refused_not_allocated() -> None:
    with pytest.raises(
        ValueError, match=r"from 1970-01-01T00:01:00Z to 2026-.*\(at most 2000000\)"
    ):
        regularize([60, 1_796_000_000], [1.0, 2.0], step_seconds=60, name="earth")
