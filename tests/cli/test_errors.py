"""The operator's first day: every mistake below ends in one line on stderr and exit 1.

Each case was a traceback, a silent wrong run or an exit 0 before: commands that need a cluster
without any kubeconfig (doctor, cleanup, run --cluster); the endpoint's port already taken;
backtest --horizon 0; plan --data without --pool on a config with several pools; a config
whose CSV files do not exist; run with a Prometheus source and no --cluster; replay --sweep
with words; replay --frontier --workers 0; an unknown config key (answered with the nearest
valid one); plan against an unreachable Prometheus. replay --json/--report into folders that
do not exist yet creates them before the work; --version answers.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from forecaster.cli import main
from forecaster.testing.prometheus_server import free_port
from tests.conftest import ITP

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "config" / "forecaster.yaml"


@pytest.fixture
def no_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.setenv("HOME", str(tmp_path))
    yield


def one_line_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1, err
    assert len(lines) == 1 and lines[0].startswith("forecaster: error: "), err
    return lines[0]


def config(tmp_path: Path, **changes: object) -> str:
    document = yaml.safe_load(BUNDLED.read_text())
    for pool in document["pools"]:
        pool["csv"] = str((BUNDLED.parent / pool["csv"]).resolve())
    document["models_dir"] = str(tmp_path / "models")
    document.update(changes)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(document))
    return str(path)


@pytest.mark.parametrize("command", [["doctor"], ["cleanup"], ["run", "--cluster"]])
def test_cluster_commands_without_a_kubeconfig(
    command: list[str], no_cluster: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = ["--port", str(free_port())] if command[0] == "run" else []
    line = one_line_error(capsys, *command, "--config", config(tmp_path), *port)
    assert "no Kubernetes API to talk to" in line and "--kube-host" in line


def test_a_taken_port_is_refused_with_its_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_line_error(capsys, "run", "--config", config(tmp_path), "--port", str(port))
    assert f"--port {port}: cannot listen" in line


def test_backtest_horizon_zero(capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_error(capsys, "backtest", "--data", str(ITP), "--horizon", "0")
    assert "--horizon must be longer than 0 s" in line


def test_plan_data_without_pool_on_several_pools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_line_error(capsys, "plan", "--config", config(tmp_path), "--data", str(ITP))
    assert "--data needs --pool: the config has 2 pools (earth, itp)" in line


def test_validate_config_checks_that_csv_files_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = yaml.safe_load(BUNDLED.read_text())
    document["pools"][1]["csv"] = str(tmp_path / "missing.csv")
    document["pools"][0]["csv"] = str((BUNDLED.parent / document["pools"][0]["csv"]).resolve())
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(document))
    line = one_line_error(capsys, "validate-config", "--config", str(path))
    assert f"pools.1.csv: {tmp_path / 'missing.csv'} does not exist" in line


def test_run_with_a_prometheus_source_needs_a_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = {"kind": "prometheus", "prometheus": {"url": "http://prometheus:9090"}}
    line = one_line_error(capsys, "run", "--config", config(tmp_path, source=source))
    assert "source.kind is prometheus" in line and "--cluster" in line


def test_replay_sweep_with_words(capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_error(capsys, "replay", "--series", str(ITP), "--sweep", "a,b")
    assert "--sweep: expected GPU counts separated by commas" in line


def test_replay_frontier_with_no_workers(capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_error(capsys, "replay", "--series", str(ITP), "--frontier", "--workers", "0")
    assert "--workers: at least 1 replay at a time, got 0" in line


def test_replay_kueue_notice_with_a_quota(capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_error(
        capsys, "replay", "--series", str(ITP), "--kueue-notice", "5m", "--kueue-quota-gpus", "64"
    )
    assert "--kueue-notice with --kueue-quota-gpus: not modelled together" in line


def test_an_unknown_config_key_names_the_nearest_valid_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = yaml.safe_load(Path(config(tmp_path)).read_text())
    document["pools"][0]["max_prewarm_gpu"] = document["pools"][0].pop("max_prewarm_gpus")
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(document))
    line = one_line_error(capsys, "validate-config", "--config", str(path))
    assert "pools.0.max_prewarm_gpu: unknown key; did you mean `max_prewarm_gpus`?" in line


def test_replay_output_folders_are_created_before_the_work(tmp_path: Path) -> None:
    out = tmp_path / "out" / "deeper"
    code = main(
        [
            "replay",
            "--series",
            str(ITP),
            "--policy",
            "reactive",
            "--warmup-days",
            "1",
            "--end-day",
            "2",
            "--json",
            str(out / "r.json"),
            "--report",
            str(out / "r.html"),
        ]
    )
    assert code == 0 and (out / "r.json").exists() and (out / "r.html").exists()


def test_plan_against_an_unreachable_prometheus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    source = {"kind": "prometheus", "prometheus": {"url": url}}
    line = one_line_error(capsys, "plan", "--config", config(tmp_path, source=source))
    assert url.split("//")[1] in line or "Prometheus" in line


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from forecaster import __version__

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"forecaster {__version__}"
