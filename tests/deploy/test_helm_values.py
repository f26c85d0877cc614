"""``forecaster helm-values``: the config file an operator tried becomes the chart's values, and
the chart renders back the same settings (real helm), so pools and caps live in one file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from forecaster.cli import main
from forecaster.settings import load_settings
from tests.deploy.renders import ROOT, by_kind, render_helm

SHIPPED = ROOT / "config" / "forecaster.yaml"

CHART_DECIDES = {"models_dir", "models_store", "dry_run", "twin", "state_config_map"}
"""Top-level settings the chart sets for a cluster (compared apart, below)."""


def _prometheus_config(tmp_path: Path, **changes: Any) -> Path:
    """The shipped config as an operator edits it for a cluster: Prometheus, no CSVs."""
    raw = yaml.safe_load(SHIPPED.read_text())
    raw["source"]["kind"] = "prometheus"
    raw["source"]["prometheus"]["url"] = "http://prometheus.example:9090"
    raw["reconcile_every_seconds"] = 20
    raw["slo"]["fast_burn"] = 7
    for pool in raw["pools"]:
        pool.pop("csv")
    raw.update(changes)
    path = tmp_path / "my-forecaster.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _rendered_config(values: Path, tmp_path: Path) -> Path:
    objects = render_helm(values=(str(values),))
    (config_map,) = [
        c for c in by_kind(objects, "ConfigMap") if c["metadata"]["name"].endswith("config")
    ]
    path = tmp_path / "rendered.yaml"
    path.write_text(config_map["data"]["forecaster.yaml"])
    return path


def test_the_chart_renders_back_the_config_it_was_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _prometheus_config(tmp_path)
    values = tmp_path / "values.yaml"
    assert main(["helm-values", "--config", str(config), "--out", str(values)]) == 0
    assert "2 pool(s)" in capsys.readouterr().err

    want = load_settings(config).model_dump(mode="json")
    got = load_settings(_rendered_config(values, tmp_path)).model_dump(mode="json")
    for key in CHART_DECIDES:
        want.pop(key), got.pop(key)
    assert got.pop("namespace") == "forecaster"  # the release's
    assert got["planning"]["placeholders"].pop("namespace") == "forecaster-placeholders"
    want.pop("namespace")
    want["planning"]["placeholders"].pop("namespace")
    assert got == want  # pools, caps, forecast, SLO, operating point, query settings


def test_what_the_chart_decides_is_said_not_copied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _prometheus_config(tmp_path, state_config_map="my-state", dry_run=True)
    assert main(["helm-values", "--config", str(config)]) == 0
    out, err = capsys.readouterr()
    values = yaml.safe_load(out)
    assert "state_config_map" not in values.get("extraConfig", {})
    assert "dry_run" not in values.get("extraConfig", {})
    assert "note: state_config_map: 'my-state' not copied; the chart uses forecaster-state" in err
    assert "note: dry_run: True not copied; the chart uses forecastOnly" in err


def test_a_typo_in_a_pool_fails_naming_it_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _prometheus_config(tmp_path)
    raw = yaml.safe_load(config.read_text())
    raw["pools"][0]["max_prewarm_gpu"] = raw["pools"][0].pop("max_prewarm_gpus")
    config.write_text(yaml.safe_dump(raw))
    values = tmp_path / "values.yaml"
    assert main(["helm-values", "--config", str(config), "--out", str(values)]) == 1
    assert "pools.0.max_prewarm_gpu" in capsys.readouterr().err
    assert not values.exists()


def test_a_csv_config_is_refused_naming_the_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["helm-values", "--config", str(SHIPPED)]) == 1
    err = capsys.readouterr().err
    assert "source.kind: csv: the chart reads Prometheus" in err
