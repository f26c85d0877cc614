"""Fault and abuse rows: uninstall, fuzzed configs, secrets in logs.

Cases: ``forecaster cleanup`` after a prewarm removes every placeholder, zeroes our
CapacityBuffer and restores the NodePool byte for byte, and a second run changes nothing (no
write); any YAML document (hypothesis) either loads or is refused with a ConfigError naming a
field or the file - never another exception; the bearer token never appears in any log record
while the daemon talks to the API server at DEBUG level.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forecaster.actuators.kube import Kube, api_client
from forecaster.cli import main
from forecaster.errors import ConfigError
from forecaster.settings import load_settings
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble

NS = "forecaster-placeholders"  # the placeholders' namespace
HOME = "forecaster"  # ours: state, Lease, kill switch, Events


def write_config(path: Path, **pool: object) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "source": {"kind": "prometheus"},
                "models_dir": str(path.parent / "models"),
                "planning": {"protect_nodepools": True},
                "pools": [
                    {"name": POOL, "max_prewarm_gpus": 32, "backend": "placeholders", **pool}
                ],
            }
        )
    )
    return path


def prewarm(api: KubeApiDouble, config: Path) -> None:
    from forecaster.app import build

    settings = load_settings(config, env={})
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    reconciler = build.build_reconciler(
        settings, source=LiveSource(T0 - 2 * 86400, calm_history()), kube=kube
    )
    reconciler.tick(T0)


def test_cleanup_undoes_everything_and_is_idempotent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with KubeApiDouble(capacity_buffers=True) as api:
        api.clock = float(T0)
        sim = ClusterSim(api)
        sim.add_nodepool(POOL, limit_gpus=200, budgets=[{"nodes": "10%"}])
        sim.add_node(POOL)
        sim.submit("job", POOL, 8)
        sim.step()
        original = copy.deepcopy(api.objects("nodepools")[0])
        prewarm(api, write_config(tmp_path / "b.yaml", backend="capacitybuffer"))
        buffer = copy.deepcopy(api.objects("capacitybuffers", NS)[0])
        prewarm(api, write_config(tmp_path / "a.yaml"))  # switching backend zeroes the buffer
        assert api.objects("capacitybuffers", NS)[0]["spec"]["replicas"] == 0
        api.store.objects.pop(("capacitybuffers", NS, buffer["metadata"]["name"]))
        buffer["metadata"].pop("resourceVersion")
        api.put("capacitybuffers", buffer)  # as if the switch had been cut off half-way
        sim.step()
        legacy = copy.deepcopy(api.objects("pods", NS)[0])  # a bare pod from before 0.2
        legacy["metadata"] = {
            "name": "forecaster-gpu-a-9-1",
            "namespace": HOME,  # where versions before 0.3 kept them
            "labels": legacy["metadata"]["labels"],
        }
        api.put("pods", legacy)
        assert (
            api.objects("jobs", NS)
            and api.objects("capacitybuffers", NS)[0]["spec"]["replicas"] > 0
        )
        config = str(tmp_path / "a.yaml")
        assert main(["cleanup", "--config", config, "--kube-host", api.url]) == 0
        out = capsys.readouterr().out
        assert "deleted placeholder" in out and "restored to its recorded original" in out
        assert "CapacityBuffer of gpu-a set to 0 replicas" in out
        assert api.objects("pods", NS) == [] and api.objects("jobs", NS) == []
        assert "CapacityBuffer of gpu-a deleted (after 0 replicas)" in out  # zeroed first
        assert api.objects("capacitybuffers", NS) == [] and api.objects("podtemplates", NS) == []
        zeroed = [r for r in api.requests if r.method == "PATCH" and "capacitybuffers" in r.path]
        deleted = [r for r in api.requests if r.method == "DELETE" and "capacitybuffers" in r.path]
        assert zeroed[-1].body["spec"]["replicas"] == 0
        assert api.requests.index(zeroed[-1]) < api.requests.index(deleted[0])
        restored = api.objects("nodepools")[0]
        assert restored["spec"] == original["spec"]
        assert restored["metadata"].get("annotations") == original["metadata"].get("annotations")
        before = len(api.writes())
        assert main(["cleanup", "--config", config, "--kube-host", api.url]) == 0
        assert "cleanup: nothing to undo" in capsys.readouterr().out
        again = [w.path for w in api.writes()[before:]]  # only the fence's hold is renewed
        assert again == [f"/apis/coordination.k8s.io/v1/namespaces/{HOME}/leases/forecaster-leader"]
        assert api.invalid == []


values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**6), 10**6),
        st.floats(allow_nan=True),
        st.text(max_size=12),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
known_keys = st.sampled_from(
    [
        "source",
        "forecast",
        "planning",
        "slo",
        "pools",
        "models_dir",
        "dry_run",
        "twin",
        "reconcile_every_seconds",
        "name",
        "gpus_per_node",
        "kind",
        "budgets",
        "max_prewarm_gpus",
        "lead_time",
        "quantiles",
    ]
)
documents = st.recursive(
    values,
    lambda children: st.dictionaries(known_keys, children, max_size=5),
    max_leaves=25,
)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(documents)
def test_fuzzed_configs_load_or_name_the_problem(tmp_path: Path, document: object) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_text(yaml.safe_dump(document))
    try:
        load_settings(path, env={})
    except ConfigError as exc:
        message = str(exc)
        assert message.startswith(str(path)) and "\n" not in message


def test_bearer_token_never_reaches_the_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "s3cr3t-token-value"
    with KubeApiDouble() as api:
        api.clock = float(T0)
        sim = ClusterSim(api)
        sim.add_nodepool(POOL, limit_gpus=200)
        sim.add_node(POOL)
        sim.step()
        from forecaster.app import build

        settings = load_settings(write_config(tmp_path / "c.yaml"), env={})
        client = api_client(host=api.url)
        client.configuration.api_key = {"authorization": f"Bearer {secret}"}
        kube = Kube(client, dry_run=False, backoff_seconds=0.01)
        api.faults.add("POST", r"/pods$", status=500, times=2)
        with caplog.at_level(logging.DEBUG):
            reconciler = build.build_reconciler(
                settings, source=LiveSource(T0 - 2 * 86400, calm_history()), kube=kube
            )
            record = reconciler.tick(T0)
        assert record.plan.pool(POOL).target_gpus > 0
        assert caplog.records
        assert all(secret not in r.getMessage() for r in caplog.records)
        assert all(secret not in str(r.args) for r in caplog.records)
