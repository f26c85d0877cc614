"""``forecaster helm-values``: the chart's values from a config file, so one file is kept.

An operator tries forecaster with ``my-forecaster.yaml`` (``check-query``, ``run
--forecast-only``), then installs the chart. Rather than copying pools and caps into a second
file by hand, this maps the config to values: ``pools`` as written, ``planning.budgets`` to
``budgets``, the few settings the chart exposes to their values, every other setting to
``extraConfig``. What the chart itself owns in a cluster (where models and state live, the
placeholders' namespace and PriorityClass, dry-run as ``forecastOnly``) is left out, and said
on stderr when the file sets it otherwise. The chart's values schema then checks the result at
render time, field by field, as it checks hand-written values.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from forecaster.errors import ConfigError

CHART_OWNED: dict[tuple[str, ...], tuple[object, str]] = {
    ("models_dir",): (None, "/var/lib/forecaster/models"),
    ("models_store",): (None, "configmap"),
    ("twin",): (None, "nothing: it is the embedded default's"),
    ("dry_run",): (False, "forecastOnly (true unless set false)"),
    ("state_config_map",): ("forecaster-state", "forecaster-state"),
    ("namespace",): (None, "the release namespace"),
    ("planning", "placeholders", "namespace"): (
        None,
        "the release namespace plus -placeholders (values placeholders.namespace)",
    ),
    ("planning", "placeholders", "priority_class"): (
        "forecaster-placeholder",
        "forecaster-placeholder",
    ),
}
"""Settings the chart sets itself, never copied into values: key path -> (the value it sets,
or None when any value is fine to drop silently; what it uses instead)."""

TO_VALUES: dict[tuple[str, ...], str] = {
    ("source", "prometheus", "url"): "prometheus.url",
    ("planning", "budgets"): "budgets",
    ("planning", "actuation"): "actuation",
    ("planning", "protect_nodepools"): "protectNodePools",
    ("reconcile_every_seconds",): "reconcileEverySeconds",
}
"""Settings with a value of their own in the chart (key path -> dotted value path)."""

CSV_ONLY: tuple[tuple[str, ...], ...] = (("source", "kind"), ("source", "csv_value_column"))
"""The chart always reads Prometheus: these mean nothing there."""


@dataclass
class HelmValues:
    """The values document and the notes on what the chart decides instead."""

    values: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def helm_values(raw: dict[str, Any]) -> HelmValues:
    """Values for ``deploy/helm/forecaster`` from a config file's mapping (already validated).

    Raises ``ConfigError`` when the file does not read Prometheus: a CSV config has no URL the
    daemon in a cluster could use.
    """
    config = copy.deepcopy(raw)
    kind = _pop(config, ("source", "kind"))
    if kind not in (None, "prometheus"):
        raise ConfigError(
            f"source.kind: {kind}: the chart reads Prometheus; set source.kind: prometheus and "
            "source.prometheus.url first"
        )
    notes: list[str] = []
    for path, (chart_value, chart_uses) in CHART_OWNED.items():
        value = _pop(config, path)
        if value is not None and chart_value is not None and value != chart_value:
            notes.append(f"{'.'.join(path)}: {value!r} not copied; the chart uses {chart_uses}")
    for path in CSV_ONLY:
        _pop(config, path)
    for pool in config.get("pools") or []:
        if isinstance(pool, dict) and pool.pop("csv", None) is not None:
            notes.append(f"pools.{pool.get('name')}.csv: not copied; the chart reads Prometheus")
    values: dict[str, Any] = {"pools": config.pop("pools", None) or []}
    for path, target in TO_VALUES.items():
        value = _pop(config, path)
        if value is not None:
            _put(values, target.split("."), value)
    _prune(config)
    if config:
        values["extraConfig"] = config
    return HelmValues(values=values, notes=notes)


def _pop(tree: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = tree
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    return node.pop(path[-1], None) if isinstance(node, dict) else None


def _put(tree: dict[str, Any], path: list[str], value: Any) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = value


def _prune(tree: dict[str, Any]) -> None:
    """Drop sections left empty once their keys went elsewhere."""
    for key in list(tree):
        if isinstance(tree[key], dict):
            _prune(tree[key])
            if not tree[key]:
                del tree[key]
