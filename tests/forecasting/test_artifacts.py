"""Artifact store: publish/load round trip, CURRENT pointer, and refusal of anything suspicious.

Cases: a published model predicts exactly as before; CURRENT is set only to verified versions;
versions list oldest first; checked-in format-1 artifacts stay loadable with their original
predictions; tampered (hash mismatch), truncated, foreign, newer-format, wrong-pool artifacts
are refused with ModelError; pool names that could escape the store are refused; skops payloads
holding types outside the allow-list are refused; the arrivals model and the operating point
published with a model load back under the same hash (an edited point is refused).
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import skops.io

from forecaster.core.cluster import RecentArrivals
from forecaster.core.operating_point import Budget, Candidate, operating_point
from forecaster.core.series import DemandSeries
from forecaster.durations import DAY
from forecaster.errors import ModelError
from forecaster.forecasting.arrivals import ArrivalsModel
from forecaster.forecasting.artifacts import ArtifactStore, canonical_hash
from forecaster.forecasting.registry import build
from tests.factories import bursty

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "artifacts"


@pytest.fixture(scope="module")
def train(helios: DemandSeries) -> DemandSeries:
    start = helios.start + 12 * DAY
    return helios.window(start, start + 5 * DAY)


def publish(store: ArtifactStore, train: DemandSeries, name: str = "persistence") -> str:
    model = build(name, horizons_seconds=(300, 900), quantiles=(0.5, 0.95)).fit(train)
    return store.publish(
        pool="earth", model_name=name, model=model, metadata={"k": 1}, created="20260101T000000Z"
    )


def test_round_trip_and_current_pointer(tmp_path: Path, train: DemandSeries) -> None:
    store = ArtifactStore(tmp_path)
    assert store.load_current("earth") is None
    model = build("gbm", horizons_seconds=(300, 900), quantiles=(0.5, 0.95)).fit(train)
    version = store.publish(
        pool="earth", model_name="gbm", model=model, metadata={"k": 1}, created="20260101T000000Z"
    )
    loaded = store.load_current("earth")
    assert loaded is not None and loaded.version == version and loaded.model_name == "gbm"
    at = np.array([train.end - 3600, train.end], dtype=np.int64)
    np.testing.assert_array_equal(
        loaded.model.predict(train, at=at).values, model.predict(train, at=at).values
    )
    assert loaded.metadata == {"k": 1}
    second = publish(store, train, "quantreg")
    assert store.versions("earth") == sorted([version, second])
    assert store.current_version("earth") == second
    store.set_current("earth", version)
    assert store.current_version("earth") == version


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("20261130T000000Z-1ecaccdb", [[[734.0, 752.0], [734.0, 766.0]]]),
        (
            "20261130T000100Z-567eb3c1",
            [[[733.9999984061724, 751.5621557705274], [731.0194885703744, 756.2507815116829]]],
        ),
    ],
)
def test_checked_in_format_1_artifacts_still_load(
    version: str, expected: list[list[list[float]]], train: DemandSeries
) -> None:
    artifact = ArtifactStore(FIXTURES).load("earth", version)
    at = np.array([train.end], dtype=np.int64)
    np.testing.assert_allclose(artifact.model.predict(train, at=at).values, expected, rtol=1e-9)


def edit(path: Path, change: object) -> None:
    document = json.loads(path.read_text())
    change(document)  # type: ignore[operator]
    path.write_text(json.dumps(document))


def resign(document: dict[str, object]) -> None:
    document.pop("sha256")
    document["sha256"] = canonical_hash(document)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: p.write_text(p.read_text()[:200]), "unreadable or truncated"),
        (
            lambda p: edit(p, lambda d: d["state"].update(offsets=[[0, 999], [0, 999]])),
            "hash mismatch",
        ),
        (lambda p: p.write_text("[1, 2]"), "not a forecaster model artifact"),
        (lambda p: edit(p, lambda d: (d.update(format_version=99), resign(d))), "newer than"),
        (lambda p: edit(p, lambda d: (d.update(pool="other"), resign(d))), "belongs to pool"),
        (lambda p: edit(p, lambda d: (d.update({"class": "pickle"}), resign(d))), "unknown model"),
        (lambda p: edit(p, lambda d: (d.update(state={}), resign(d))), "state is invalid"),
    ],
)
def test_damaged_artifacts_are_refused(
    tmp_path: Path, train: DemandSeries, damage: object, message: str
) -> None:
    store = ArtifactStore(tmp_path)
    version = publish(store, train)
    damage(tmp_path / "earth" / f"{version}.json")  # type: ignore[operator]
    with pytest.raises(ModelError, match=message):
        store.load("earth", version)


@pytest.mark.parametrize("pool", ["../etc", "Earth", "a/b", ""])
def test_pool_names_cannot_escape_the_store(tmp_path: Path, pool: str) -> None:
    with pytest.raises(ModelError, match="not a valid NodePool name"):
        ArtifactStore(tmp_path).load(pool, "20261130T000000Z-1ecaccdb")


def test_bad_versions_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="is not a model version"):
        ArtifactStore(tmp_path).load("earth", "../../x")
    (tmp_path / "earth").mkdir()
    (tmp_path / "earth" / "CURRENT").write_text("../../etc/passwd\n")
    with pytest.raises(ModelError, match="is not a model version"):
        ArtifactStore(tmp_path).load_current("earth")


def test_skops_payload_with_untrusted_types_is_refused(tmp_path: Path, train: DemandSeries) -> None:
    store = ArtifactStore(tmp_path)
    model = build("gbm-raw", horizons_seconds=(300,), quantiles=(0.5, 0.95)).fit(train)
    version = store.publish(
        pool="earth", model_name="gbm-raw", model=model, metadata={}, created="20260101T000000Z"
    )
    evil = base64.b64encode(skops.io.dumps({"f": shutil.rmtree})).decode()

    def inject(document: dict[str, object]) -> None:
        document["state"]["regressors"][0]["skops"] = evil  # type: ignore[index]
        resign(document)

    edit(tmp_path / "earth" / f"{version}.json", inject)
    with pytest.raises(ModelError, match="untrusted types"):
        store.load("earth", version)


def test_the_arrivals_model_travels_in_the_artifact_under_its_hash(
    tmp_path: Path, train: DemandSeries
) -> None:
    demand, created = bursty(2, seed=4)
    arrivals = ArrivalsModel(horizons_seconds=(300,), quantiles=(0.5, 0.95)).fit(demand, created)
    store = ArtifactStore(tmp_path)
    model = build("persistence", horizons_seconds=(300, 900), quantiles=(0.5, 0.95)).fit(train)
    version = store.publish(
        pool="earth",
        model_name="persistence",
        model=model,
        metadata={},
        created="20260101T000000Z",
        arrivals=arrivals,
    )
    loaded = store.load("earth", version).arrivals
    recent = RecentArrivals((1, 4, 9, 30))
    assert loaded is not None
    assert loaded.predict(level=9, recent=recent, at=0) == arrivals.predict(
        level=9, recent=recent, at=0
    )
    assert store.load("earth", publish(store, train)).arrivals is None  # trained without
    path = tmp_path / "earth" / f"{version}.json"
    edit(path, lambda d: d["arrivals"]["coefficients"][0]["beta"].__setitem__(0, 99.0))
    with pytest.raises(ModelError, match="hash mismatch"):
        store.load("earth", version)


def test_the_operating_point_travels_in_the_artifact_under_its_hash(
    tmp_path: Path, train: DemandSeries
) -> None:
    point = operating_point(
        [Candidate(0.9, 1050.0, 30.0, 90.0, 0.02)],
        reactive_gpu_hours=1000.0,
        budget=Budget(percent=10),
        window=(0, DAY),
    )
    store = ArtifactStore(tmp_path)
    model = build("persistence", horizons_seconds=(300, 900), quantiles=(0.5, 0.95)).fit(train)
    version = store.publish(
        pool="earth",
        model_name="persistence",
        model=model,
        metadata={},
        created="20260101T000000Z",
        operating_point=point,
    )
    assert store.load("earth", version).operating_point == point
    assert store.load("earth", publish(store, train)).operating_point is None  # chosen without

    def cheaper(document: dict[str, object]) -> None:
        document["operating_point"]["quantile"] = 0.5  # type: ignore[index]

    edit(tmp_path / "earth" / f"{version}.json", cheaper)
    with pytest.raises(ModelError, match="hash mismatch"):
        store.load("earth", version)
