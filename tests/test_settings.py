"""Config loading: the bundled file is valid; every mistake is refused naming its field.

Cases: bundled config and path resolution; unknown keys; wrong types and ranges; inconsistent
quantiles, horizons, lead times, duplicate pools, csv without a file; env overrides (nested
and list index) and a bad override path; YAML syntax errors with the line; missing file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from forecaster.app.build import pool_horizon
from forecaster.errors import ConfigError
from forecaster.settings import load_settings

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ROOT / "config" / "forecaster.yaml"


def write(tmp_path: Path, document: object) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def minimal(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {"source": {"kind": "prometheus"}, "pools": [{"name": "gpu-a"}]}
    base.update(changes)
    return base


def test_bundled_config_is_valid_and_paths_are_resolved() -> None:
    settings = load_settings(BUNDLED, env={})
    assert [p.name for p in settings.pools] == ["earth", "itp"]
    assert settings.pools[0].csv == ROOT / "data" / "samples" / "helios-earth-2020-05.csv"
    assert settings.models_dir == ROOT / "models"
    assert pool_horizon(settings, settings.pools[0]) == 900  # lead time 7 min -> 15 min horizon


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            minimal(pools=[{"name": "gpu-a", "gpus_per_nodes": 8}]),
            r"pools.0.gpus_per_nodes: unknown key; did you mean `gpus_per_node`\?",
        ),
        (
            minimal(pools=[{"name": "gpu-a", "gpus_per_node": 0}]),
            r"pools.0.gpus_per_node: must be > 0, got 0",
        ),
        (
            minimal(pools=[{"name": "GPU_A"}]),
            r"pools.0.name: must match the pattern .*, got 'GPU_A'",
        ),
        (minimal(pools=[]), r"pools: needs at least 1 item"),
        (
            minimal(pools=[{"name": "gpu-a", "floor_gpus": -8}]),
            r"pools.0.floor_gpus: must be >= 0, got -8",
        ),
        (
            minimal(operating_point={"budget_percent": 5, "floor_nodes": [0, -2]}),
            r"operating_point: floor_nodes must be >= 0",
        ),
        (minimal(pools=[{"name": "a"}, {"name": "a"}]), r"pool names must be unique"),
        (minimal(forecast={"quantiles": [0.5, 0.9]}), r"forecast: quantiles must include 0.95"),
        (minimal(forecast={"horizons_seconds": [90]}), r"not multiples of step_seconds"),
        (minimal(forecast={"models": ["prophet", "lstm"]}), r"unknown models \['lstm'\]"),
        (
            minimal(source={"kind": "kafka"}),
            r"source.kind: must be one of 'csv' or 'prometheus', got 'kafka'",
        ),
        (minimal(source={"kind": "csv"}), r"pools.0.csv is required"),
        (
            minimal(pools=[{"name": "a", "lead_time": {"image_pull_seconds": 3600}}]),
            r"pools.0.lead_time adds up to 3720s, beyond the longest forecast horizon",
        ),
        (minimal(source={"prometheus": {"url": "prom:9090"}}), r"source.prometheus.url"),
        # the slo section is the core SloPolicy itself: its own checks, field names kept
        (minimal(slo={"fast_brn": 2}), r"slo.fast_brn: unknown key; did you mean `fast_burn`\?"),
        (minimal(slo={"fast_burn": "x"}), r"slo.fast_burn: must be a number"),
        (minimal(slo={"recovery_burn": 9}), r"slo: recovery_burn must not exceed the hand-off"),
        (
            minimal(slo={"max_waste_gpu_hours_per_day": float("inf")}),
            r"slo: max_waste_gpu_hours_per_day must be a finite number >= 0",
        ),
        (["a", "b"], r"must be a mapping of sections"),
        (
            minimal(operating_point={"budget_percent": 0}),
            r"operating_point.budget_percent: must be > 0.0, got 0",
        ),
        (
            minimal(operating_point={"budget_percent": 5, "budget_dollars_per_day": 100}),
            r"operating_point: give one of budget_percent, budget_dollars_per_day and"
            r" p95_wait_seconds, not budget_percent and budget_dollars_per_day",
        ),
        (
            minimal(operating_point={"quantiles": [0.4]}),
            r"operating_point: quantiles must lie between 0.5 and 1",
        ),
        (
            minimal(operating_point={"model": "lstm"}),
            r"operating_point: model: unknown 'lstm'",
        ),
        (
            minimal(operating_point={"budget_percent": 5, "measure_days": 28}),
            r"operating_point.measure_days \(28\) must leave at least a day of"
            r" forecast.history_days \(28\)",
        ),
    ],
)
def test_bad_configs_name_the_field(tmp_path: Path, document: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        load_settings(write(tmp_path, document), env={})
    assert "\n" not in str(info.value)


def test_environment_overrides(tmp_path: Path) -> None:
    path = write(tmp_path, minimal())
    settings = load_settings(
        path,
        env={
            "FORECASTER_SOURCE__PROMETHEUS__URL": "http://prom.example:9090",
            "FORECASTER_POOLS__0__GPUS_PER_NODE": "4",
            "UNRELATED": "x",
        },
    )
    assert settings.source.prometheus.url == "http://prom.example:9090"
    assert settings.pools[0].gpus_per_node == 4
    assert load_settings(path, env={"FORECASTER_SLO__FAST_BURN": "9"}).slo.fast_burn == 9.0
    with pytest.raises(ConfigError, match=r"FORECASTER_POOLS__3__NAME: pools has no item 3"):
        load_settings(path, env={"FORECASTER_POOLS__3__NAME": "x"})
    with pytest.raises(ConfigError, match=r"pools.0.gpus_per_node: must be a whole number"):
        load_settings(path, env={"FORECASTER_POOLS__0__GPUS_PER_NODE": "many"})


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("pools:\n  - name: a\n   bad: [\n")
    with pytest.raises(ConfigError, match=r"c.yaml:3: not valid YAML"):
        load_settings(path, env={})


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope.yaml: cannot read config"):
        load_settings(tmp_path / "nope.yaml", env={})


def test_the_slo_follows_the_plan_unless_given(tmp_path: Path) -> None:
    """A P80 plan exceeds its forecast 20 % of the time by design: its SLO must expect that;
    the waste budget is what prewarm may spend a day."""
    p80 = minimal(
        forecast={"quantiles": [0.5, 0.8], "target_quantile": 0.8},
        planning={"budgets": {"max_prewarm_gpu_hours_per_day": 650}},
    )
    slo = load_settings(write(tmp_path, p80), env={}).slo
    assert (slo.target_exceedance, slo.max_waste_gpu_hours_per_day) == (0.2, 650.0)
    looser = load_settings(write(tmp_path, {**p80, "slo": {"target_exceedance": 0.3}}), env={})
    assert looser.slo.target_exceedance == 0.3
    with pytest.raises(ConfigError, match=r"slo.target_exceedance 0.05 is below the 0.2 of"):
        load_settings(write(tmp_path, {**p80, "slo": {"target_exceedance": 0.05}}), env={})
    assert load_settings(write(tmp_path, minimal()), env={}).slo.target_exceedance == 0.05


def test_with_a_budget_models_are_fitted_for_every_quantile_it_may_choose(tmp_path: Path) -> None:
    plain = load_settings(write(tmp_path, minimal()), env={})
    assert plain.model_quantiles == (0.5, 0.95)
    budget = minimal(operating_point={"budget_percent": 5, "quantiles": [0.8, 0.9]})
    assert load_settings(write(tmp_path, budget), env={}).model_quantiles == (0.5, 0.8, 0.9, 0.95)


@pytest.mark.parametrize(
    ("changes", "field", "says"),
    [
        ({"planning": {"placeholders": {"ttl_seconds": 10 * 365 * 86400}}}, "ttl_seconds", "86400"),
        ({"planning": {"protect_seconds": 10 * 365 * 86400}}, "protect_seconds", "86400"),
        ({"planning": {"protect_consolidate_after": "Never"}}, "protect_consolidate_after", ""),
        ({"reconcile_every_seconds": 1800}, "reconcile_every_seconds", "under half"),
        ({"planning": {"budgets": {"max_total_prewarm_gpus": 10**7}}}, "max_total_prewarm", ""),
        ({"planning": {"budgets": {"max_cost_per_hour": 10**9}}}, "max_cost_per_hour", ""),
        ({"pools": [{"name": "gpu-a", "max_prewarm_gpus": 10**6}]}, "max_prewarm_gpus", ""),
        ({"pools": [{"name": "gpu-a", "max_prewarm_gpus": True}]}, "max_prewarm_gpus", "number"),
        ({"reconcile_every_seconds": True}, "reconcile_every_seconds", "expected a number"),
        ({"pools": [{"name": "a" * 40}]}, "pools.0", "its placeholder Jobs would be named"),
    ],
)
def test_hard_bounds_name_the_field(
    tmp_path: Path, changes: dict[str, object], field: str, says: str
) -> None:
    """Nothing we hold may outlive a fault by more than a day, no cap is a typo's extra zeros,
    and no pool's objects get names Kubernetes refuses."""
    with pytest.raises(ConfigError, match=field) as raised:
        load_settings(write(tmp_path, minimal(**changes)), env={})
    assert says in str(raised.value)
    assert "\n" not in str(raised.value)


def test_the_longest_pool_name_that_fits_is_accepted(tmp_path: Path) -> None:
    name = "a" * 37  # forecaster-<37>-99-9999999999 is 63 characters
    settings = load_settings(write(tmp_path, minimal(pools=[{"name": name}])), env={})
    assert settings.pools[0].name == name
