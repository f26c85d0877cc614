"""``history export`` and ``replay --days``: a pool's own history in Prometheus as a replay.

A real Prometheus is backfilled with what kube-state-metrics would have exported for three days
of ITP cluster04 (each job as node-sized pods of one Job, scraped every minute). The export must
give the trace's jobs back - submission and GPUs exact, each multi-node job one gang, each
duration within one scrape - and a replay straight from Prometheus must give the same JSON as a
replay of the exported CSV. A history shorter than a replay needs is refused in one line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml

from forecaster.app import build
from forecaster.app.history import MIN_FRONTIER, MIN_REPLAY, Windows, windows
from forecaster.cli import build_parser, main
from forecaster.cli.replay import lead_said, setup_from
from forecaster.core.jobs import JobTrace
from forecaster.core.series import iso_utc
from forecaster.durations import DAY
from forecaster.errors import DataError
from forecaster.settings import load_settings
from forecaster.sources.files import read_job_trace
from forecaster.sources.prometheus import PrometheusSource
from forecaster.testing.ksm_history import job_series
from forecaster.testing.prometheus_server import Series, running_prometheus
from tests.conftest import ROOT, SAMPLES

EPOCH = 1_767_225_600  # 2026-01-01T00:00Z: trace second 0
FIRST, LAST = 2, 5  # the trace days kube-state-metrics saw
START, END = EPOCH + FIRST * DAY, EPOCH + LAST * DAY
SCRAPE = 60


@pytest.fixture(scope="module")
def trace() -> JobTrace:
    return read_job_trace(SAMPLES / "msr-itp-cluster04-jobs.csv", epoch=EPOCH)


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory, trace: JobTrace) -> Iterator[str]:
    series = list(job_series(trace, start=START, end=END, every=SCRAPE, pool="itp"))
    series += job_series(  # the same jobs on a pool of MIG slices
        trace,
        start=START,
        end=END,
        every=SCRAPE,
        pool="itp-mig",
        resource="nvidia_com_mig_1g_10gb",
        prefix="mig-",
    )
    with running_prometheus(tmp_path_factory.mktemp("prometheus"), series) as url:
        yield url


def _config(tmp_path: Path, url: str) -> Path:
    document = yaml.safe_load((ROOT / "config" / "forecaster.yaml").read_text())
    document["source"] = {"kind": "prometheus", "prometheus": {"url": url, "retries": 0}}
    document["models_dir"] = str(tmp_path / "models")
    document["twin"]["jobs"] = str(SAMPLES / "msr-itp-cluster04-jobs.csv")
    mig = {**document["pools"][0], "name": "itp-mig", "resource": "nvidia.com/mig-1g.10gb"}
    document["pools"].append(mig)
    path = tmp_path / "forecaster.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_the_export_gives_back_the_traces_jobs_gangs_whole(
    tmp_path: Path, prometheus: str, trace: JobTrace, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "jobs.csv"
    config = _config(tmp_path, prometheus)
    argv = ["history", "export", "--config", str(config), "--pool", "itp", "--days", "3"]
    code = main([*argv, "--end", iso_utc(END), "-o", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert f"pool itp: 3 days of pod history, {iso_utc(START)} to {iso_utc(END)}" in printed
    assert f"--epoch {iso_utc(START)}" in printed
    got = read_job_trace(out, epoch=START)
    want = trace.seen_between(START, END)
    assert len(got) == len(want)
    assert int((want.gpus > 8).sum()) > 10  # gangs of several 8-GPU pods are in the window
    order_got = np.lexsort((got.duration, got.gpus, got.submit))
    order_want = np.lexsort((want.duration, want.gpus, want.submit))
    np.testing.assert_array_equal(got.submit[order_got], want.submit[order_want])
    np.testing.assert_array_equal(got.gpus[order_got], want.gpus[order_want])  # gangs whole
    late = want.duration[order_want] - got.duration[order_got]
    assert late.min() >= 0 and late.max() < SCRAPE  # seen alive until the last scrape


def test_a_replay_from_prometheus_is_the_replay_of_the_export(
    tmp_path: Path, prometheus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, prometheus)
    common = ["replay", "--config", str(config), "--pool", "itp", "--policy", "reactive,predictive"]
    direct = tmp_path / "direct.json"
    code = main([*common, "--days", "3", "--end", iso_utc(END), "--json", str(direct)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "replaying warm-up days 1-1, judged 2-3" in printed
    assert "lead: the configured" in printed  # no daemon ran here: nothing measured
    exported = tmp_path / "jobs.csv"
    argv = ["history", "export", "--config", str(config), "--pool", "itp", "--days", "3"]
    assert main([*argv, "--end", iso_utc(END), "-o", str(exported)]) == 0
    command = capsys.readouterr().out.split("replay it with: forecaster ")[1].split()
    from_csv = tmp_path / "from_csv.json"
    command = [*command, "--policy", "reactive,predictive", "--json", str(from_csv)]
    assert main(command) == 0
    assert json.loads(direct.read_text()) == json.loads(from_csv.read_text())


def test_a_mig_pools_history_is_read_in_its_slices_and_replays_as_a_gpu_pools(
    tmp_path: Path, prometheus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same jobs on a pool of MIG slices (its pods ask for ``nvidia.com/mig-1g.10gb``, the
    pool says so): its export is the GPU pool's, and so is its replay."""
    config = _config(tmp_path, prometheus)
    out = {}
    for pool in ("itp", "itp-mig"):
        out[pool] = tmp_path / f"{pool}.csv"
        argv = ["history", "export", "--config", str(config), "--pool", pool, "--days", "3"]
        assert main([*argv, "--end", iso_utc(END), "-o", str(out[pool])]) == 0
    capsys.readouterr()
    assert out["itp-mig"].read_text() == out["itp"].read_text()
    assert len(out["itp"].read_text().splitlines()) > 100
    replays = {}
    for pool in ("itp", "itp-mig"):
        replays[pool] = tmp_path / f"{pool}.json"
        argv = ["replay", "--config", str(config), "--pool", pool, "--days", "3"]
        argv += ["--policy", "predictive", "--end", iso_utc(END), "--json", str(replays[pool])]
        assert main(argv) == 0, capsys.readouterr().out
    gpu, mig = (json.loads(replays[p].read_text()) for p in ("itp", "itp-mig"))
    assert mig == gpu


@pytest.mark.parametrize(("frontier", "needs"), [(True, 14), (False, 3)])
def test_a_history_too_short_is_refused_in_one_line(
    tmp_path: Path,
    prometheus: str,
    capsys: pytest.CaptureFixture[str],
    frontier: bool,
    needs: int,
) -> None:
    config = _config(tmp_path, prometheus)
    days = "2" if not frontier else "20"
    argv = ["replay", "--config", str(config), "--pool", "itp", "--days", days]
    end = START + 2 * DAY if not frontier else END
    code = main([*argv, "--end", iso_utc(end), *(["--frontier"] if frontier else [])])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert err[-1].startswith("forecaster: error: pool itp: replay")
    assert f"needs at least {needs} days of history" in err[-1]
    assert "found" in err[-1]


def test_the_daemons_measured_lead_is_read_as_medians_and_launches_the_twins_nodes(
    tmp_path: Path,
) -> None:
    hours = range(START, END, 3600)
    provisioning = [(t, 90.0 + (t // 3600) % 3) for t in hours]  # 90, 91, 92, ...: median 91
    series = [
        Series(
            "forecaster_lead_measured_seconds",
            {"pool": "itp", "part": "provisioning"},
            provisioning,
        ),
        Series(
            "forecaster_lead_measured_seconds", {"pool": "itp", "part": "startup"}, [(START, 240.0)]
        ),
    ]
    with running_prometheus(tmp_path, series) as url:
        source = PrometheusSource(url=url, queries={})
        lead = source.measured_lead("itp", start=START, end=END)
        assert source.measured_lead("other", start=START, end=END) is None
    assert lead is not None
    assert (lead.provisioning_seconds, lead.startup_seconds) == (91.0, 240.0)
    settings = load_settings(_config(tmp_path, "http://127.0.0.1:9"))
    args = build_parser().parse_args(["replay", "--config", "x", "--pool", "itp"])
    measured = setup_from(args, START, settings=settings, lead=lead)
    configured = setup_from(args, START, settings=settings)
    assert (measured.twin.provision_seconds, measured.twin.image_pull_seconds) == (91.0, 240.0)
    pool = settings.pool("itp")
    assert configured.twin.provision_seconds == pool.lead_time.provisioning_seconds
    assert configured.budgets == build.budgets(settings)  # the config's caps, not derived ones


def _karpenter_histogram(part: str, counts: dict[str, float]) -> list[Series]:
    """Karpenter's ``karpenter_pods_provisioning_<part>_duration_seconds`` buckets (cumulative
    ``counts`` per ``le``) grown from 0 at START to ``counts`` at END, and its ``_count``."""
    name = f"karpenter_pods_provisioning_{part}_duration_seconds"
    hours = list(range(START, END + 1, 3600))

    def grown(total: float) -> list[tuple[int, float]]:
        return [(t, total * (t - START) / (END - START)) for t in hours]

    out = [Series(f"{name}_bucket", {"le": le}, grown(n)) for le, n in counts.items()]
    return [*out, Series(f"{name}_count", {}, grown(counts["+Inf"]))]


def test_without_the_daemons_lead_karpenters_provisioning_histograms_give_it(
    tmp_path: Path,
) -> None:
    """No ``forecaster_lead_measured_seconds``: the launch is Karpenter's median time from
    judging a pod schedulable to binding it, the start-up its median to running less that."""
    series = _karpenter_histogram("bound", {"60": 0, "120": 300, "300": 300, "+Inf": 300})
    series += _karpenter_histogram("startup", {"60": 0, "120": 0, "300": 300, "+Inf": 300})
    with running_prometheus(tmp_path, series) as url:
        lead = PrometheusSource(url=url, queries={}).measured_lead("itp", start=START, end=END)
    with running_prometheus(tmp_path / "bare", []) as url:
        assert (
            PrometheusSource(url=url, queries={}).measured_lead("itp", start=START, end=END) is None
        )
    assert lead is not None
    assert lead.origin == "karpenter"
    assert (lead.provisioning_seconds, lead.startup_seconds) == (90.0, 120.0)  # 210 - 90
    assert lead.launches == pytest.approx(300, rel=0.05)
    pool = load_settings(_config(tmp_path, "http://127.0.0.1:9")).pool("itp")
    assert lead_said(lead, pool).startswith("lead: measured by Karpenter (medians of")
    assert lead_said(lead, pool).endswith("launch 90 s, start-up 120 s")
    assert "neither the daemon nor Karpenter" in lead_said(None, pool)


def test_what_exists_is_split_a_quarter_warm_up_then_tuned_and_judged() -> None:
    assert windows(28, frontier=True) == Windows(warmup=7, tuned=12, judged=9)
    assert windows(14, frontier=True) == MIN_FRONTIER == Windows(warmup=3, tuned=7, judged=4)
    assert windows(3, frontier=False) == MIN_REPLAY == Windows(warmup=1, tuned=0, judged=2)
    assert windows(28, frontier=True).said() == "warm-up days 1-7, tuned 8-19, judged 20-28"
    with pytest.raises(DataError, match="needs at least 14 days"):
        windows(13, frontier=True)
