"""Ctrl-C stops a command in one line, exit 130; a live run then says what it leaves held.

Cases (each a real ``forecaster`` process sent SIGINT once it is working): the embedded default
(``run``), a live replica against the API double (``run --kube-host``), a read-only replica
(``run --forecast-only --kube-host``) and ``train`` - each exits 130 with at most two lines on
stderr after the signal and no traceback; after the live run, stdout has one line per pool with
placeholders still held and the time they end without the daemon. SIGTERM (a pod stopped)
releases the Lease on the way out.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.prewarm.placeholders import Placeholders, PlaceholderSpec
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.prometheus_server import free_port

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "config" / "forecaster.yaml"
NS = "forecaster-placeholders"  # the placeholders' namespace
HOME = "forecaster"  # ours: state, Lease, kill switch, Events


def config(tmp_path: Path) -> Path:
    document = yaml.safe_load(BUNDLED.read_text())
    for pool in document["pools"]:
        pool["csv"] = str((BUNDLED.parent / pool["csv"]).resolve())
    document["models_dir"] = str(tmp_path / "models")
    document["twin"]["jobs"] = str((BUNDLED.parent / document["twin"]["jobs"]).resolve())
    document["twin"]["warmup_days"] = 8
    document["twin"]["models"] = ["persistence"]
    document["forecast"]["min_history_days"] = 7
    document["forecast"]["models"] = ["persistence"]
    document["forecast"]["history_days"] = 8
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def scratch(tmp_path: Path) -> Path:
    """The command's own temporary folder: what it leaves there, it leaks."""
    folder = tmp_path / "tmp"
    folder.mkdir(exist_ok=True)
    return folder


def started(argv: list[str], tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path, Path]:
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys; from forecaster.cli import main; sys.exit(main())",
                *argv,
            ],
            stdout=stdout,
            stderr=stderr,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(scratch(tmp_path))},
        )
    return process, out, err


def ready(port: int, process: subprocess.Popen[bytes], *, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, "the command ended before it was ready"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError("never ready")


def interrupt(process: subprocess.Popen[bytes], err: Path) -> list[str]:
    """SIGINT; the stderr lines written after it."""
    before = err.stat().st_size
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 130
    after = err.read_bytes()[before:].decode(errors="replace")
    lines = [line for line in after.splitlines() if line.strip()]
    assert "Traceback" not in after
    return lines


def a_cluster(api: KubeApiDouble) -> None:
    sim = ClusterSim(api)
    for pool in ("earth", "itp", "old"):  # old: a pool that left the config, still held
        sim.add_nodepool(pool, limit_gpus=400)
        sim.add_node(pool)
    sim.step()


@pytest.mark.slow
def test_ctrl_c_in_the_embedded_default(tmp_path: Path) -> None:
    port = free_port()
    process, _, err = started(
        ["run", "--config", str(config(tmp_path)), "--port", str(port)], tmp_path
    )
    ready(port, process)
    lines = interrupt(process, err)
    assert len(lines) <= 2 and lines[-1] == "forecaster: interrupted"
    assert not list(scratch(tmp_path).iterdir())  # the twin's models went with the run


@pytest.mark.slow
@pytest.mark.parametrize("forecast_only", [False, True])
def test_ctrl_c_in_a_replica_says_what_stays_held(tmp_path: Path, forecast_only: bool) -> None:
    with KubeApiDouble() as api:
        a_cluster(api)
        kube = Kube(api_client(host=api.url), dry_run=False)
        Placeholders(kube, namespace=NS, priority_class="forecaster-placeholder").apply(
            PlaceholderSpec(pool="old", gpus=8, ttl_seconds=3600), target=2, now=int(api.clock)
        )
        port = free_port()
        argv = ["run", "--kube-host", api.url, "--config", str(config(tmp_path))]
        argv += ["--port", str(port)]
        process, out, err = started(argv + (["--forecast-only"] if forecast_only else []), tmp_path)
        ready(port, process)
        lines = interrupt(process, err)
        assert len(lines) <= 2 and lines[-1] == "forecaster: interrupted"
        said = out.read_text()
        if forecast_only:
            assert "placeholder Job" not in said  # it holds nothing: nothing to say
        else:
            assert "pool old: 2 placeholder Job(s), 16 GPUs, the last ending by 20" in said
            assert "`forecaster cleanup` withdraws them now" in said


@pytest.mark.slow
def test_ctrl_c_in_train(tmp_path: Path) -> None:
    path = config(tmp_path)
    document = yaml.safe_load(path.read_text())
    document["forecast"]["models"] = ["prophet", "quantreg"]  # seconds a pool: time to interrupt
    document["forecast"]["history_days"] = 14
    path.write_text(yaml.safe_dump(document))
    process, _, err = started(["train", "--config", str(path)], tmp_path)
    deadline = time.monotonic() + 60
    while b"pool earth: the source has" not in err.read_bytes() and time.monotonic() < deadline:
        assert process.poll() is None, err.read_text()
        time.sleep(0.2)
    lines = interrupt(process, err)
    assert len(lines) <= 2 and lines[-1] == "forecaster: interrupted"


@pytest.mark.slow
def test_sigterm_releases_the_lease(tmp_path: Path) -> None:
    with KubeApiDouble() as api:
        a_cluster(api)
        port = free_port()
        argv = ["run", "--kube-host", api.url, "--config", str(config(tmp_path))]
        argv += ["--port", str(port)]
        process, _, _ = started(argv, tmp_path)
        ready(port, process)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 128 + signal.SIGTERM
        (lease,) = api.objects("leases", HOME)
        assert lease["spec"]["holderIdentity"] == ""  # released: a successor need not wait
        assert json.dumps(lease)
