"""The daemon's grants that follow its config (``forecaster rbac``): which NodePools it may get
and patch, and which kinds it may list for the notice sources it reads.

Both renders grant exactly these: Kustomize from ``deploy/base/config-rbac.yaml``, which this
command writes from ``deploy/base/forecaster.yaml`` (regenerate it when you change the pools or
``notice.sources`` there); Helm from its values, through ``files/config-rbac-rules.yaml``
(``notice_rules``: each source's rules as its module declares its kinds), which
``scripts/config_rbac.py`` writes. Rules are emitted in one order - notice sources by name (as
Helm ranges over a map), then Kueue's quota for gated pools, duplicates dropped - so both
renders produce the same objects (``tests/deploy/test_helm.py`` compares them).
"""

from __future__ import annotations

from typing import Any

import yaml

from forecaster.actuators.notice.base import ApiKind
from forecaster.actuators.notice.kueue_pending import CLUSTER_QUEUES
from forecaster.actuators.notice.kueue_reserved import FLAVORS, WORKLOADS
from forecaster.actuators.notice.registry import SOURCES
from forecaster.settings import Settings
from forecaster.settings.schema import NoticeSettings

Rule = dict[str, list[str]]
KUSTOMIZE_HEADER = (
    "# The daemon's grants that follow deploy/base/forecaster.yaml: NodePool get/patch on its\n"
    "# pools by name, and list on the kinds of its notice.sources (bound in rbac.yaml).\n"
    "# Generated: after changing the pools or notice.sources there, run\n"
    "#   forecaster rbac --config deploy/base/forecaster.yaml > deploy/base/config-rbac.yaml\n"
    "# (a pool missing here gets 403 on its NodePool, which doctor names).\n"
)
NODEPOOLS_ROLE = "forecaster-nodepools"
NOTICE_ROLE = "forecaster-notice"
KUEUE_QUOTA = (CLUSTER_QUEUES, FLAVORS, WORKLOADS)
"""What a Kueue-gated pool (``pools[].kueue``) reads: its quota room."""


def kind_rule(kind: ApiKind) -> Rule:
    """What reading ``kind`` needs: ``list`` cluster-wide, or ``get`` on its subresource."""
    if kind.subresource is not None:
        resource = f"{kind.plural}/{kind.subresource}"
        return {"apiGroups": [kind.group], "resources": [resource], "verbs": ["get"]}
    return {"apiGroups": [kind.group], "resources": [kind.plural], "verbs": ["list"]}


def notice_rules() -> dict[str, list[Rule]]:
    """Each notice source's rules, by the name the config uses, in registry order."""
    return {name: [kind_rule(k) for k in source.kinds] for name, source in SOURCES.items()}


def notice_role_rules(settings: Settings) -> list[Rule]:
    """The rules of ``forecaster-notice``: the enabled sources' kinds (sources by name), then
    Kueue's quota when a pool is Kueue-gated; each rule once."""
    rules: list[Rule] = []
    for name, source_rules in sorted(notice_rules().items()):  # Helm ranges a map by key
        if name in settings.notice.sources:
            rules += source_rules
    if any(pool.kueue is not None for pool in settings.pools):
        rules += [kind_rule(kind) for kind in KUEUE_QUOTA]
    return _unique(rules)


def config_rbac(settings: Settings) -> list[dict[str, Any]]:
    """The two ClusterRoles whose rules follow the config (bound in ``deploy/base/rbac.yaml``):
    NodePool ``get``/``patch`` on the configured pools by name (``list`` cannot be limited by
    name), and the notice sources' reads."""
    nodepool_rules = [
        {
            "apiGroups": ["karpenter.sh"],
            "resources": ["nodepools"],
            "resourceNames": [pool.name for pool in settings.pools],
            "verbs": ["get", "patch"],
        },
        {"apiGroups": ["karpenter.sh"], "resources": ["nodepools"], "verbs": ["list"]},
    ]
    return [
        _cluster_role(NODEPOOLS_ROLE, nodepool_rules),
        _cluster_role(NOTICE_ROLE, notice_role_rules(settings)),
    ]


def chart_rules() -> dict[str, Any]:
    """What the chart reads to render the same rules: each source's, the sources read by
    default and Kueue's quota."""
    default = NoticeSettings.model_fields["sources"].default
    return {
        "default_sources": list(default),
        "notice_rules": notice_rules(),
        "kueue_quota_rules": [kind_rule(kind) for kind in KUEUE_QUOTA],
    }


def dump(documents: list[dict[str, Any]], *, header: str) -> str:
    """YAML documents under a comment header."""
    body = yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=None, width=100)
    return header + body


def _cluster_role(name: str, rules: list[Any]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
    }


def _unique(rules: list[Rule]) -> list[Rule]:
    out: list[Rule] = []
    for rule in rules:
        if rule not in out:
            out.append(rule)
    return out
