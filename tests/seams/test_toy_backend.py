"""A prewarm backend from outside the package, through the registry's public seam.

``LedgerBackend`` lives only here: registered with ``prewarm.registry.register_backend`` - no
package file names it. It "holds" prewarm as one entry per pool in a ConfigMap of ours (what a
backend that holds capacity with no pod of ours looks like: an external reservation API, a
static NodePool's replicas). End to end on the API double: settings accept its name (and refuse
an unknown one); the daemon's actuator prewarms with it and, on the first tick, withdraws the
other backends; the observer counts what it holds as our prewarm (the ledger charges the nodes
it keeps, as for a CapacityBuffer); ``doctor`` lists it as served;
uninstall withdraws it without a config, expiry ends what outlived its deadline; ``replay
--backend`` follows the conduct it declared (no grace, refilled by the autoscaler: a
CapacityBuffer's figures, not placeholders').
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.prewarm import registry
from forecaster.actuators.prewarm.base import Prewarm
from forecaster.actuators.prewarm.placeholders import Applied, PlaceholderSpec
from forecaster.actuators.undo import Undone
from forecaster.app import build, cleanup
from forecaster.cli import main
from forecaster.core.actions import AUTOSCALER_HELD
from forecaster.errors import ConfigError
from forecaster.service.daemon import Daemon
from forecaster.settings import Settings
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.actuators.test_backends import settings
from tests.factories import jobs_csv, synthetic

NS = "forecaster-placeholders"  # the placeholders' namespace
HOME = "forecaster"  # ours: state, Lease, kill switch, Events
NAME = "forecaster-ledger-prewarm"


class LedgerBackend:
    """Prewarm as ``{pool: {"units", "gpus", "expires"}}`` in one labelled ConfigMap."""

    name = "ledger"

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube, self.namespace = kube, namespace

    @classmethod
    def make(cls, kube: Kube, namespace: str, priority_class: str) -> LedgerBackend:
        return cls(kube, namespace)

    def served(self) -> str | None:
        return None

    def _read(self) -> tuple[dict[str, Any] | None, dict[str, dict[str, int]]]:
        current = self.kube.get_config_map(self.namespace, NAME)
        data = (current or {}).get("data") or {}
        return current, {pool: json.loads(text) for pool, text in data.items()}

    def _write(self, current: dict[str, Any] | None, held: Mapping[str, dict[str, int]]) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": NAME,
                "namespace": self.namespace,
                "labels": {lbl.MANAGED_BY: lbl.MANAGER},
            },
            "data": {pool: json.dumps(entry) for pool, entry in held.items()},
        }
        self.kube.put_config_map(self.namespace, body, current=current)  # type: ignore[arg-type]

    def converge(self, asked: Prewarm) -> Applied:
        current, held = self._read()
        spec = asked.spec
        entry = {"units": asked.units, "gpus": spec.gpus, "expires": asked.now + spec.ttl_seconds}
        self._write(current, {**held, spec.pool: entry})
        return Applied()

    def withdraw(self, spec: PlaceholderSpec, *, now: int) -> Applied:
        current, held = self._read()
        if spec.pool in held:
            self._write(current, {p: e for p, e in held.items() if p != spec.pool})
        return Applied()

    def status(self, pool: str) -> str | None:
        return f"{self._read()[1].get(pool, {}).get('units', 0)} unit(s) in {NAME}"

    def held_gpus(self) -> Mapping[str, int]:
        return {pool: e["units"] * e["gpus"] for pool, e in self._read()[1].items()}

    def uninstall(self, undone: Undone) -> None:
        def withdraw_all() -> str | None:
            current, held = self._read()
            if not held:
                return None
            self._write(current, {})
            return f"ledger prewarm of {', '.join(sorted(held))} withdrawn"

        undone.attempt(f"ConfigMap {self.namespace}/{NAME}", withdraw_all)

    def settle(self, undone: Undone, sleep: Callable[[float], None]) -> None:
        return None

    def expire(self, undone: Undone, *, now: int) -> None:
        def drop_expired() -> str | None:
            current, held = self._read()
            live = {p: e for p, e in held.items() if e["expires"] > now}
            if live == held:
                return None
            self._write(current, live)
            return f"ledger prewarm of {', '.join(sorted(set(held) - set(live)))} expired"

        undone.attempt(f"ConfigMap {self.namespace}/{NAME}", drop_expired)

    def still_held(self) -> list[str]:
        return [
            f"pool {pool}: {e['units']} ledger unit(s) until {e['expires']}"
            for pool, e in sorted(self._read()[1].items())
            if e["units"]
        ]


@pytest.fixture
def ledger() -> Iterator[str]:
    """``ledger`` registered for this test only, declaring a CapacityBuffer's conduct."""
    with registry.BACKENDS.trial():
        registry.register_backend(LedgerBackend.name, LedgerBackend.make, conduct=AUTOSCALER_HELD)
        yield LedgerBackend.name


def daemon(config: Settings, kube: Kube) -> Daemon:
    reconciler = build.build_reconciler(
        config, source=LiveSource(T0 - 2 * 86400, calm_history()), kube=kube
    )
    return Daemon(reconciler=reconciler, pools=(POOL,))


@pytest.fixture
def api() -> Iterator[KubeApiDouble]:
    with KubeApiDouble(capacity_buffers=True) as server:
        server.clock = float(T0)
        ClusterSim(server, buffer_controller=True).busy_pool(POOL)
        yield server
    assert server.invalid == [], server.invalid


def held(api: KubeApiDouble) -> dict[str, dict[str, int]]:
    (config_map,) = [c for c in api.objects("configmaps", NS) if c["metadata"]["name"] == NAME]
    return {pool: json.loads(text) for pool, text in (config_map.get("data") or {}).items()}


def test_settings_take_their_backend_names_from_the_registry(ledger: str, tmp_path: Path) -> None:
    assert settings(tmp_path, actuation=ledger).planning.actuation == ledger
    with pytest.raises(ValidationError, match="unknown actuation 'nowhere'"):
        settings(tmp_path, actuation="nowhere")
    with pytest.raises(ConfigError, match="registered already"):
        registry.register_backend("placeholders", LedgerBackend.make, conduct=AUTOSCALER_HELD)


def test_the_daemon_prewarms_with_it_and_counts_what_it_holds(
    ledger: str, tmp_path: Path, api: KubeApiDouble
) -> None:
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    d = daemon(settings(tmp_path, actuation=ledger), kube)
    d.reconcile(T0)
    record = d.last
    assert record is not None and record.errors == ()
    target = record.plan.pool(POOL).target_gpus
    assert target >= 8
    assert held(api)[POOL]["units"] * 8 == target
    assert api.objects("jobs", NS) == [] and api.objects("capacitybuffers", NS) == []
    assert record.actuation is not None
    assert record.actuation.backend[POOL] == f"{ledger} (configured: actuation {ledger})"
    assert record.actuation.buffer_status[POOL] == f"{target // 8} unit(s) in {NAME}"
    d.reconcile(T0 + 300)  # the observer reads what it holds: our prewarm, not spare
    assert d.last is not None and d.last.plan.pool(POOL).target_gpus == target
    snapshot = d.last.pools[POOL].snapshot
    assert snapshot is not None and snapshot.prewarm_gpus == target


def test_doctor_lists_it_and_cleanup_and_expiry_withdraw_it_without_a_config(
    ledger: str, tmp_path: Path, api: KubeApiDouble, capsys: pytest.CaptureFixture[str]
) -> None:
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    config = settings(tmp_path, actuation=ledger)
    daemon(config, kube).reconcile(T0)
    path = tmp_path / "forecaster.yaml"
    path.write_text(yaml.safe_dump(config.model_dump(mode="json")))
    main(["doctor", "--config", str(path), "--kube-host", api.url])
    printed = capsys.readouterr().out
    assert f"backend: {ledger} (configured: actuation {ledger})" in printed
    assert f"backend {ledger}: served" in printed
    assert cleanup.still_held(kube, placeholders=NS)[0].startswith(f"pool {POOL}: ")
    expired = cleanup.expire(kube, namespace=HOME, placeholders=NS, now=T0 + 10**6)
    assert f"ledger prewarm of {POOL} expired" in expired.changed and held(api) == {}
    daemon(config, kube).reconcile(T0 + 600)
    assert held(api)
    undone = cleanup.cleanup(
        kube, namespace=HOME, placeholders=NS, wall=lambda: float(T0), sleep=lambda s: None
    )
    assert f"ledger prewarm of {POOL} withdrawn" in undone.changed and undone.failed == []
    assert held(api) == {}


def test_replay_follows_the_conduct_it_declared(ledger: str, tmp_path: Path) -> None:
    trace, epoch = jobs_csv(tmp_path / "jobs.csv", synthetic(3, seed=7))
    days = ["--epoch", epoch, "--start-day", "0", "--warmup-days", "1", "--end-day", "3"]
    runs = {}
    for backend in (ledger, "capacitybuffer", "placeholders"):
        out = tmp_path / f"{backend}.json"
        policy = ["--policy", "static:32", "--sweep", "", "--backend", backend]
        assert main(["replay", "--jobs", str(trace), *days, *policy, "--json", str(out)]) == 0
        runs[backend] = json.loads(out.read_text())["static:32"]
    assert runs[ledger] == runs["capacitybuffer"]  # the conduct, not the name, is simulated
    assert runs[ledger] != runs["placeholders"]
