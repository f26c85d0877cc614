"""One malformed object harms only its own pool: that pool withdraws and says why, others go on.

Two pools prewarm on the API double; then one of pool ``gpu-b``'s objects is damaged - its
entry in the state ConfigMap, its NodePool's GPU limit, its NodePool pause record, or its
forecast raising - and the next ticks must keep pool ``gpu-a`` prewarming, withdraw
``gpu-b``'s placeholders, and report the problem for ``gpu-b`` in the tick's errors (what
``/api/v1/status`` and ``forecaster_reconcile_errors_total`` show). A pod another team wrote
costs itself only, not its pool: ``tests/faults/test_tenant_objects.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from forecaster.actuators.kube import Kube, api_client
from forecaster.app import build
from forecaster.reconcile.loop import Reconciler
from forecaster.settings import Settings
from forecaster.testing.fakes import T0, LiveSource, calm_history
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble

NS = "forecaster-placeholders"  # the placeholders' namespace
HOME = "forecaster"  # ours: state, Lease, kill switch, Events
GOOD, BAD = "gpu-a", "gpu-b"


def reconciler(api: KubeApiDouble, tmp_path: Path, source: LiveSource) -> Reconciler:
    config = Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(tmp_path / "models"),
            "planning": {"protect_nodepools": True},
            "pools": [
                {"name": GOOD, "max_prewarm_gpus": 32},
                {"name": BAD, "max_prewarm_gpus": 32},
            ],
        }
    )
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    return build.build_reconciler(config, source=source, kube=kube)


def damage_state(api: KubeApiDouble, sim: ClusterSim) -> None:
    (config_map,) = api.objects("configmaps", HOME)
    state = json.loads(config_map["data"]["state.json"])
    state["pools"][BAD]["budget"] = {"mode": "no-such-mode"}
    config_map["data"]["state.json"] = json.dumps(state)
    api.store.replace(("configmaps", HOME, config_map["metadata"]["name"]), config_map)


def damage_limit(api: KubeApiDouble, sim: ClusterSim) -> None:
    nodepool = api.store.get(("nodepools", "", BAD))
    nodepool["spec"]["limits"]["nvidia.com/gpu"] = "lots"
    api.store.replace(("nodepools", "", BAD), nodepool)


def damage_record(api: KubeApiDouble, sim: ClusterSim) -> None:
    nodepool = api.store.get(("nodepools", "", BAD))
    nodepool["metadata"]["annotations"]["forecaster.io/original-disruption"] = "{not json"
    api.store.replace(("nodepools", "", BAD), nodepool)


DAMAGE: dict[str, Callable[[KubeApiDouble, ClusterSim], None]] = {
    "state entry": damage_state,
    "NodePool GPU limit": damage_limit,
    "NodePool pause record": damage_record,
}


@pytest.mark.parametrize("what", [*DAMAGE, "forecast raises"])
def test_a_malformed_object_stays_in_its_pool(tmp_path: Path, what: str) -> None:
    with KubeApiDouble() as api:
        api.clock = float(T0)
        sim = ClusterSim(api)
        sim.running_pools(GOOD, BAD)
        source = LiveSource(T0 - 2 * 86400, calm_history())
        loop = reconciler(api, tmp_path, source)
        record = loop.tick(T0)
        sim.step()
        assert record.errors == ()
        assert {j["metadata"]["labels"]["forecaster.io/pool"] for j in api.objects("jobs", NS)} == {
            GOOD,
            BAD,
        }
        if what == "forecast raises":
            fetch = source.fetch

            def broken(pool: str, **kwargs: int):  # type: ignore[no-untyped-def]
                if pool == BAD:
                    raise KeyError("values")  # a bug, not a SourceError
                return fetch(pool, **kwargs)

            source.fetch = broken  # type: ignore[method-assign]
        else:
            DAMAGE[what](api, sim)
        if what == "state entry":
            loop = reconciler(api, tmp_path, source)  # a restart reads the damaged state
        for minute in (1, 2):
            source.append(source.values[-1])
            api.clock = float(T0 + 60 * minute)
            record = loop.tick(T0 + 60 * minute)
            sim.step()
        good, bad = record.plan.pool(GOOD), record.plan.pool(BAD)
        assert good.target_gpus >= 8, good.reasons
        assert bad.target_gpus == 0, bad.reasons
        reported = any(e.pool == BAD for e in record.errors) or bad.mode.value != "predictive"
        assert reported, record.errors
        jobs = api.objects("jobs", NS)
        live = [j for j in jobs if not j.get("status", {}).get("conditions")]
        assert {j["metadata"]["labels"]["forecaster.io/pool"] for j in live} == {GOOD}
        assert not any(e.pool == GOOD for e in record.errors), record.errors
