"""Any target quantile the settings accept runs end to end: P90 and P99 through ``plan``, the
daemon (``run``'s embedded twin, its endpoint) and ``replay``; labels name the quantile used."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from forecaster.app.build import build_embedded
from forecaster.cli import main
from forecaster.service.http import create_app
from forecaster.settings import load_settings
from tests.factories import jobs_csv, synthetic

ROOT = Path(__file__).resolve().parents[2]
HELIOS = ROOT / "data" / "samples" / "helios-earth-2020-05.csv"


@pytest.mark.parametrize("q", [0.9, 0.99])
def test_plan_names_and_uses_the_target_quantile(
    q: float, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    label = f"P{round(q * 100)}"
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "source": {"kind": "csv"},
                "forecast": {"quantiles": [0.5, q], "target_quantile": q},
                "models_dir": str(tmp_path / "models"),
                "pools": [{"name": "earth", "csv": str(HELIOS), "max_prewarm_gpus": 16}],
            }
        )
    )
    assert main(["plan", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"- {label} demand [\d.]+ GPUs at lead time", out), out
    assert "P95" not in out


@pytest.mark.parametrize("q", [0.9, 0.99])
def test_the_daemon_on_the_twin_plans_for_the_target_quantile(q: float, tmp_path: Path) -> None:
    settings = load_settings(ROOT / "config" / "forecaster.yaml", env={})
    settings = settings.model_copy(
        update={
            "twin": settings.twin.model_copy(update={"warmup_days": 8, "models": ("persistence",)}),
            "forecast": settings.forecast.model_copy(
                update={"quantiles": (0.5, q), "target_quantile": q, "min_history_days": 7}
            ),
        }
    )
    run = build_embedded(settings, models_dir=tmp_path)
    run.step(run.twin.now + 2 * 3600)
    record = run.daemon.last
    assert record is not None
    assert any(r.startswith(f"P{round(q * 100)} demand") for r in record.plan.pool("itp").reasons)
    forecast = TestClient(create_app(run.daemon)).get("/api/v1/forecast", params={"pool": "itp"})
    assert forecast.json()["forecast"]["upper_quantile"] == q


def test_replay_plans_for_the_quantile_asked(tmp_path: Path) -> None:
    """A P99 plan holds more prewarm than a P90 plan on the same trace (replay's predictive
    trains on its first 7 days, then plans)."""
    jobs = synthetic(8, seed=5)
    path, epoch = jobs_csv(tmp_path / "jobs.csv", jobs)
    used = {}
    for q in (0.9, 0.99):
        out = tmp_path / f"r{q}.json"
        args = [
            "replay",
            "--jobs",
            str(path),
            "--epoch",
            epoch,
            "--policy",
            "predictive",
            "--model",
            "persistence",
            "--quantile",
            str(q),
            "--warmup-days",
            "7",
            "--end-day",
            "8",
            "--json",
            str(out),
        ]
        assert main(args) == 0
        used[q] = json.loads(out.read_text())["predictive"]["prewarm_gpu_hours_used"]
        used[q] += json.loads(out.read_text())["predictive"]["prewarm_gpu_hours_expired"]
    assert used[0.99] > used[0.9] > 0


def test_backtest_forecasts_name_the_quantile_asked(tmp_path: Path) -> None:
    output = tmp_path / "forecasts.csv"
    args = ["backtest", "--data", str(HELIOS), "--horizon", "15m", "--models", "persistence"]
    assert main([*args, "--quantile", "0.9", "--output", str(output)]) == 0
    with output.open() as handle:
        header = next(csv.reader(handle))
    assert header == ["origin", "target_time", "horizon_s", "model", "p50", "p90", "actual"]
