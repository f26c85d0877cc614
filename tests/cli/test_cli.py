"""The ``forecaster`` command, run in-process.

Cases: backtest acceptance on both shared series at 15 min (selected model's P95 coverage within
0.94-0.96 and pinball no worse than the persistence baseline printed in the same run; --output
rows and columns); train publishes artifacts and ``models list`` shows them; too-short history
marks a pool forecast-only with how much more it needs; bad CSV, bad PromQL, unreachable
Prometheus and a bad config each end as one line on stderr with exit 1; usage errors exit 2.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import numpy as np
import pytest
import yaml

from forecaster.cli import main
from forecaster.testing.prometheus_server import free_port
from tests.conftest import HELIOS, ITP


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def table(out: str) -> dict[str, tuple[float, float, int]]:
    """model -> (coverage, pinball, points) from the printed score table."""
    rows = {}
    for line in out.splitlines():
        match = re.match(r"^\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s+[-+].*?(\d+)(  <- selected)?$", line)
        if match:
            rows[match.group(1)] = (
                float(match.group(2)),
                float(match.group(3)),
                int(match.group(4)),
            )
    return rows


@pytest.mark.parametrize("data", [HELIOS, ITP], ids=["helios", "itp"])
def test_backtest_acceptance(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, data: Path
) -> None:
    output = tmp_path / "f.csv"
    code, out, _ = run(
        capsys,
        "backtest",
        "--data",
        str(data),
        "--horizon",
        "15m",
        "--models",
        "persistence,quantreg,gbm",
        "--output",
        str(output),
    )
    assert code == 0, out
    scores = table(out)
    assert set(scores) == {"persistence", "quantreg", "gbm"}
    selected = re.search(r"selected: (\S+)", out)
    assert selected is not None
    coverage, pinball, _ = scores[selected.group(1)]
    assert 0.94 <= coverage <= 0.96
    assert pinball <= scores["persistence"][1]
    with output.open() as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["origin", "target_time", "horizon_s", "model", "p50", "p95", "actual"]
    assert {r["model"] for r in rows} == {"persistence", "quantreg", "gbm"}
    for model, (_, _, points) in scores.items():
        assert sum(r["model"] == model for r in rows) == points
    gbm = [r for r in rows if r["model"] == "gbm"]
    hits = np.mean([float(r["actual"]) <= float(r["p95"]) for r in gbm])
    assert hits == pytest.approx(scores["gbm"][0], abs=1e-3)


def test_backtest_of_a_bad_csv_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("timestamp,gpus_requested\n2026-01-01T00:00:00Z,3\n2026-01-01T00:01:00Z,x\n")
    code, _, err = run(capsys, "backtest", "--data", str(bad))
    assert code == 1
    assert err == "forecaster: error: " + f"{bad}:3: bad value 'x' (want a number of GPUs)\n"


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["backtest", "--data", "x.csv", "--horizon", "soon"])
    assert info.value.code == 2
    assert "bad duration 'soon'" in capsys.readouterr().err


def write_csv(path: Path, source: Path, days: float) -> Path:
    lines = source.read_text().splitlines()
    path.write_text("\n".join(lines[: 1 + int(days * 1440)]) + "\n")
    return path


def config(tmp_path: Path, **source: object) -> dict[str, object]:
    return {
        "source": source or {"kind": "csv"},
        "forecast": {
            "models": ["persistence", "quantreg"],
            "backtest": {"test_days": 1, "train_days": 14},
        },
        "models_dir": str(tmp_path / "models"),
        "pools": [{"name": "earth", "csv": str(tmp_path / "earth.csv")}],
    }


def save(tmp_path: Path, document: dict[str, object]) -> str:
    path = tmp_path / "forecaster.yaml"
    path.write_text(yaml.safe_dump(document))
    return str(path)


def test_train_publishes_and_models_list_shows_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    write_csv(tmp_path / "earth.csv", ITP, days=16)
    cfg = save(tmp_path, config(tmp_path))
    code, out, _ = run(capsys, "train", "--config", cfg)
    assert code == 0, out
    assert re.search(r"pool earth: trained - published (persistence|quantreg) as version", out)
    assert "selected:" in out
    code, out, _ = run(capsys, "models", "list", "--config", cfg)
    assert code == 0 and re.search(r"\* \d{8}T\d{6}Z-[0-9a-f]{8}", out)


def test_too_short_history_is_forecast_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    write_csv(tmp_path / "earth.csv", ITP, days=5)
    code, out, _ = run(capsys, "train", "--config", save(tmp_path, config(tmp_path)))
    assert code == 0
    assert (
        "pool earth: forecast-only - only 5.0 days of usable history, needs 14: 9.0 more day(s)"
        in out
    )
    assert not (tmp_path / "models" / "earth").exists()


def test_unreachable_prometheus_fails_the_pool_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    document = config(tmp_path, kind="prometheus", prometheus={"url": url, "retries": 0})
    code, out, _ = run(capsys, "train", "--config", save(tmp_path, document))
    assert code == 1
    assert f"pool earth: failed - Prometheus {url} is unreachable: " in out


@pytest.mark.prometheus
def test_bad_promql_fails_the_pool_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, prometheus_url: str
) -> None:
    document = config(tmp_path, kind="prometheus", prometheus={"url": prometheus_url})
    document["pools"] = [{"name": "earth", "query": "sum(gpus_requested{"}]
    code, out, _ = run(capsys, "train", "--config", save(tmp_path, document))
    assert code == 1
    assert re.search(r"pool earth: failed - Prometheus .* rejected the query: bad_data: ", out)


def test_bad_config_is_one_line_naming_the_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    document = config(tmp_path)
    document["pools"] = [{"name": "earth", "gpus_per_node": -1, "csv": "x.csv"}]
    code, _, err = run(capsys, "validate-config", "--config", save(tmp_path, document))
    assert code == 1
    assert err.count("\n") == 1 and "pools.0.gpus_per_node: must be > 0, got -1" in err


def test_bundled_config_validates(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate-config")
    assert code == 0 and "config OK: 2 pool(s): earth, itp" in out


def test_plan_prints_every_number_with_its_reason(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    document = config(tmp_path)
    document["pools"] = [{"name": "earth", "csv": str(HELIOS), "max_prewarm_gpus": 16}]
    document["planning"] = {"budgets": {"max_total_prewarm_gpus": 8}}
    code, out, _ = run(capsys, "plan", "--config", save(tmp_path, document))
    assert code == 0, out
    assert "pool earth: predictive, model persistence (fallback)" in out
    assert re.search(r"forecast from 2020-05-31T15:59Z for \+15m: P50 [\d.]+, P95 [\d.]+ GPUs", out)
    assert re.search(r"cluster: \d+ GPUs allocatable, 0 launching, \d+ running", out)
    assert "prewarm target 8 GPUs = 1 placeholder(s) x 8 GPUs (needed 24 before caps)" in out
    assert re.search(
        r"- P95 demand [\d.]+ GPUs at lead time \(persistence\) vs \d+ requested now", out
    )
    assert "- capped by pool max_prewarm_gpus (16 GPUs): 24 -> 16" in out
    assert "- capped by total prewarm GPUs (8): 16 -> 8" in out
    assert "- warm nodes kept by karpenter.sh/do-not-disrupt on the placeholders" in out
    assert re.search(r"budgets: prewarm 8 of 8 GPUs; cost \$32\.00/h", out)


def test_plan_for_a_p90_target_names_and_uses_p90(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """target_quantile 0.9 is a value the settings accept: it once ended in a KeyError."""
    document = config(tmp_path)
    document["pools"] = [{"name": "earth", "csv": str(HELIOS), "max_prewarm_gpus": 16}]
    document["forecast"] = {"quantiles": [0.5, 0.9], "target_quantile": 0.9}
    code, out, err = run(capsys, "plan", "--config", save(tmp_path, document))
    assert code == 0, err
    assert re.search(r"for \+15m: P50 [\d.]+, P90 [\d.]+ GPUs", out)
    assert re.search(r"- P90 demand [\d.]+ GPUs at lead time", out)
    assert "P95" not in out


def test_plan_with_data_for_one_pool(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "plan", "--data", str(ITP), "--pool", "itp")
    assert code == 0
    assert "pool itp:" in out and "pool earth:" not in out
    assert "plan at 2026-02-26T23:59Z" in out


def test_backtest_shows_progress_on_a_terminal_only(tmp_path: Path) -> None:
    """On a terminal, ``backtest`` draws a bar advanced per model; piped (CronJob logs), none."""
    data = write_csv(tmp_path / "short.csv", HELIOS, days=4)
    command = str(Path(sys.executable).parent / "forecaster")  # the installed console script
    args = [
        command,
        "backtest",
        "--data",
        str(data),
        "--models",
        "persistence,seasonal-naive",
        "--test",
        "1d",
        "--train",
        "2d",
        "--horizon",
        "15m",
    ]
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a terminal
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=secondary) as proc:
        os.close(secondary)
        out, _ = proc.communicate(timeout=120)
        seen = b""
        with contextlib.suppress(OSError):
            while chunk := os.read(primary, 4096):
                seen += chunk
    os.close(primary)
    assert proc.returncode == 0, out
    assert b"2/2 model backtests, seasonal-naive" in seen
    piped = subprocess.run(args, capture_output=True, timeout=120, check=True)
    assert b"model backtests" not in piped.stderr


def test_every_subcommand_and_flag_says_what_it_is() -> None:
    """``--help`` of each subcommand says what it does; each flag has help, and a flag taking a
    number or a duration names its unit or its default."""
    import argparse

    from forecaster.cli import build_parser
    from forecaster.durations import parse_duration

    units = re.compile(r"\(|GPUs|seconds|days|\$|duration|0-1|fraction|e\.g\.")
    missing = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help for a in action._choices_actions}
                for name, sub in action.choices.items():
                    if not helps.get(name):
                        missing.append(f"{path} {name}: no help")
                    walk(sub, f"{path} {name}")
            elif action.dest not in ("help", "version"):
                flag = f"{path} {action.option_strings}"
                if not action.help:
                    missing.append(f"{flag}: no help")
                elif action.type in (int, float, parse_duration) and not units.search(action.help):
                    missing.append(f"{flag}: no unit or default in {action.help!r}")

    walk(build_parser(), "forecaster")
    assert missing == []
