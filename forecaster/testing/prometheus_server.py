"""Start a real Prometheus on a free loopback port with history backfilled by promtool.

The Debian ``prometheus`` package (installed by scripts/setup) gives both binaries. History is
written as OpenMetrics text and turned into TSDB blocks with
``promtool tsdb create-blocks-from openmetrics --max-block-duration=24h`` (the default 2 h
blocks take ~10x longer), then Prometheus is started on the block directory.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

Sample = tuple[int, float]


@dataclass(frozen=True)
class Series:
    """One backfilled series: metric name, labels and (timestamp, value) samples."""

    metric: str
    labels: dict[str, str]
    samples: Iterable[Sample]
    keep_nan: bool = False
    """Write NaN samples as ``NaN`` (a faulty exporter); by default NaN means no sample (a gap)."""


def write_openmetrics(path: Path, series: list[Series]) -> None:
    """OpenMetrics text: one ``# TYPE`` per metric family, samples in time order, ``# EOF``."""
    by_metric: dict[str, list[Series]] = {}
    for item in series:
        by_metric.setdefault(item.metric, []).append(item)
    with path.open("w") as out:
        for metric, members in by_metric.items():
            out.write(f"# TYPE {metric} gauge\n")
            for member in members:
                label_text = ",".join(f'{k}="{v}"' for k, v in sorted(member.labels.items()))
                for ts, value in member.samples:
                    if np.isfinite(value):
                        out.write(f"{metric}{{{label_text}}} {float(value)!r} {int(ts)}\n")
                    elif member.keep_nan and np.isnan(value):
                        out.write(f"{metric}{{{label_text}}} NaN {int(ts)}\n")
        out.write("# EOF\n")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def require_binaries() -> tuple[str, str]:
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if not prometheus or not promtool:
        raise RuntimeError(
            "prometheus/promtool not found: run scripts/setup (installs Debian's 'prometheus')"
        )
    return prometheus, promtool


@contextmanager
def running_prometheus(
    workdir: Path,
    series: list[Series],
    *,
    retention: str = "3650d",
    scrape: dict[str, str] | None = None,
    scrape_interval: str = "1m",
) -> Iterator[str]:
    """Backfill ``series``, start Prometheus (keeping ``retention``), yield its URL, stop it.

    ``scrape``: job name -> ``host:port`` of a live ``/metrics`` to scrape every
    ``scrape_interval`` (the closed-loop test scrapes its kube-state-metrics stand-in and the
    daemon each second)."""
    prometheus, promtool = require_binaries()
    data_dir = workdir / "tsdb"
    data_dir.mkdir(parents=True)
    if series:
        _backfill(promtool, workdir, series, data_dir)
    config = workdir / "prometheus.yml"
    jobs = "".join(
        f"  - job_name: {job}\n    static_configs:\n      - targets: ['{target}']\n"
        for job, target in (scrape or {}).items()
    )
    config.write_text(
        f"global:\n  scrape_interval: {scrape_interval}\n"
        f"  scrape_timeout: {scrape_interval}\n"
        f"scrape_configs:{' []' if not jobs else ''}\n{jobs}"
    )
    port = free_port()
    log = (workdir / "prometheus.log").open("w")
    process = subprocess.Popen(
        [
            prometheus,
            f"--config.file={config}",
            f"--storage.tsdb.path={data_dir}",
            f"--storage.tsdb.retention.time={retention}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, process, workdir / "prometheus.log")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _backfill(promtool: str, workdir: Path, series: list[Series], data_dir: Path) -> None:
    source = workdir / "backfill.om"
    write_openmetrics(source, series)
    subprocess.run(
        [
            promtool,
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            "--max-block-duration=24h",
            "--quiet",
            str(source),
            str(data_dir),
        ],
        check=True,
        capture_output=True,
    )


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"prometheus exited early:\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"prometheus not ready after 30 s:\n{log.read_text()[-2000:]}")
