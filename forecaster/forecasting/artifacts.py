"""Versioned, hashed model files: the only file I/O in forecasting.

Layout under the store root (``models/`` by default)::

    <pool>/<version>.json     one artifact per training run, never modified after writing
    <pool>/CURRENT            the version in use (replaced atomically)

An artifact is JSON: ``format``, ``format_version``, ``pool``, ``model`` (the name given to
``registry.build``), ``state`` (the model's ``to_state()``), ``metadata`` (data window and hash,
backtest scores, library versions), ``arrivals`` (the peak-additional-demand model's state, when
one was trained) and ``sha256`` over all of that. Loading verifies the hash,
refuses unknown formats and newer versions, and rebuilds the model through the registry - no
pickle, and sklearn trees through skops with an allow-list. Publishing writes to a temporary file,
loads it back, then renames, so a crash never leaves a half-written current model.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forecaster.core.operating_point import OperatingPoint
from forecaster.errors import ModelError
from forecaster.forecasting.arrivals import ArrivalsModel, RiseModel
from forecaster.forecasting.base import Forecaster
from forecaster.forecasting.burst import BurstRule
from forecaster.forecasting.registry import restore

FORMAT = "forecaster.model"
FORMAT_VERSION = 1
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$")
_VERSION = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{8}$")


@dataclass(frozen=True)
class Artifact:
    """A loaded, verified model with its metadata."""

    pool: str
    version: str
    model_name: str
    model: Forecaster
    metadata: dict[str, Any]
    arrivals: RiseModel | None = None
    """The peak-additional-demand model published with it - the arrivals model, or the burst
    rule for a pool whose policy is ``burst`` (None: trained without arrivals)."""
    operating_point: OperatingPoint | None = None
    """The quantile and budget chosen at the retrain that trained it (None: none chosen)."""


def rise_model(state: dict[str, Any]) -> RiseModel:
    """The published rise model from its state: the burst rule's says its ``kind``."""
    if state.get("kind") == BurstRule.name:
        return BurstRule.from_state(state)
    return ArrivalsModel.from_state(state)


def canonical_hash(document: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``document`` (sorted keys, no spaces)."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


class ArtifactStore:
    """Reads and publishes artifacts under one root directory."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def publish(
        self,
        *,
        pool: str,
        model_name: str,
        model: Forecaster,
        metadata: dict[str, Any],
        created: str,
        make_current: bool = True,
        arrivals: RiseModel | None = None,
        operating_point: OperatingPoint | None = None,
    ) -> str:
        """Write a new version (``created`` is a UTC ``YYYYmmddTHHMMSSZ`` stamp); return it."""
        body = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "pool": pool,
            "model": model_name,
            "class": model.name,
            "state": model.to_state(),
            "metadata": metadata,
        }
        if arrivals is not None:  # absent, not null: artifacts without one keep their hash
            body["arrivals"] = arrivals.to_state()
        if operating_point is not None:
            body["operating_point"] = operating_point.to_dict()
        digest = canonical_hash(body)
        version = f"{created}-{digest[:8]}"
        directory = self._pool_dir(pool)
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / f"{version}.json"
        _atomic_write(target, json.dumps({**body, "sha256": digest}, sort_keys=True))
        self.load(pool, version)  # verify what landed on disk before anyone points at it
        if make_current:
            self.set_current(pool, version)
        return version

    def read_text(self, pool: str, version: str) -> str:
        """The artifact file of ``version`` as stored (for mirroring it elsewhere)."""
        self.load(pool, version)  # only verified artifacts leave the store
        return (self._pool_dir(pool) / f"{version}.json").read_text()

    def install(self, pool: str, version: str, *, text: str) -> None:
        """Store an artifact received from elsewhere, verify it, then make it current.

        A damaged or foreign artifact raises ``ModelError`` and CURRENT is left as it was.
        """
        _check_version(version)
        directory = self._pool_dir(pool)
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / f"{version}.json"
        _atomic_write(target, text)
        try:
            self.set_current(pool, version)
        except ModelError:
            target.unlink(missing_ok=True)
            raise

    def set_current(self, pool: str, version: str) -> None:
        """Point CURRENT at ``version`` (which must exist and verify)."""
        self.load(pool, version)
        _atomic_write(self._pool_dir(pool) / "CURRENT", version + "\n")

    def current_version(self, pool: str) -> str | None:
        """The version CURRENT points at, or None if the pool has no model yet."""
        pointer = self._pool_dir(pool) / "CURRENT"
        if not pointer.exists():
            return None
        version = pointer.read_text().strip()
        _check_version(version)
        return version

    def versions(self, pool: str) -> list[str]:
        """All stored versions of ``pool``, oldest first."""
        directory = self._pool_dir(pool)
        if not directory.is_dir():
            return []
        return sorted(p.stem for p in directory.glob("*.json") if _VERSION.match(p.stem))

    def load_current(self, pool: str) -> Artifact | None:
        """The current artifact of ``pool``, or None if none was published."""
        version = self.current_version(pool)
        return None if version is None else self.load(pool, version)

    def load(self, pool: str, version: str) -> Artifact:
        """Read, verify and rebuild one artifact; any problem is a ``ModelError``."""
        _check_version(version)
        path = self._pool_dir(pool) / f"{version}.json"
        try:
            document = json.loads(path.read_text())
        except FileNotFoundError:
            raise ModelError(f"{path}: no such model artifact") from None
        except (OSError, ValueError) as exc:
            raise ModelError(f"{path}: unreadable or truncated artifact: {exc}") from exc
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise ModelError(f"{path}: not a forecaster model artifact")
        if int(document.get("format_version", 0)) > FORMAT_VERSION:
            raise ModelError(
                f"{path}: format version {document['format_version']} is newer than this"
                f" forecaster understands ({FORMAT_VERSION}); upgrade forecaster"
            )
        claimed = document.pop("sha256", None)
        if claimed != canonical_hash(document):
            raise ModelError(f"{path}: hash mismatch - the artifact was modified or corrupted")
        if document.get("pool") != pool:
            raise ModelError(f"{path}: artifact belongs to pool {document.get('pool')!r}")
        try:
            model = restore(document["class"], document["state"])
            arrivals = rise_model(document["arrivals"]) if "arrivals" in document else None
            point = (
                OperatingPoint.from_dict(document["operating_point"])
                if "operating_point" in document
                else None
            )
        except ModelError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"{path}: artifact state is invalid: {exc!r}") from exc
        return Artifact(
            pool=pool,
            version=version,
            model_name=str(document["model"]),
            model=model,
            metadata=dict(document.get("metadata", {})),
            arrivals=arrivals,
            operating_point=point,
        )

    def _pool_dir(self, pool: str) -> Path:
        if not _NAME.match(pool):
            raise ModelError(f"pool name {pool!r} is not a valid NodePool name")
        return self.root / pool


def _check_version(version: str) -> None:
    if not _VERSION.match(version):
        raise ModelError(f"{version!r} is not a model version (want YYYYmmddTHHMMSSZ-xxxxxxxx)")


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; other replicas (other uids) read artifacts
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
