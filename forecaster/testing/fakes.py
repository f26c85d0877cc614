"""The daemon's inputs, faked: a demand source whose history grows as the test advances time,
a calm history, and the settings of one pool on the API double."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from forecaster.core.quality import QualityReport, regularize
from forecaster.core.series import DemandSeries
from forecaster.errors import SourceError
from forecaster.settings import Settings

POOL = "gpu-a"
T0 = 1_800_000_000 - 1_800_000_000 % 3600


def calm_history(days: float = 2.0, level: float = 16.0, seed: int = 0) -> list[float]:
    """Mostly flat demand with small jobs coming and going (a persistence P95 of a few GPUs)."""
    rng = np.random.default_rng(seed)
    values = level + np.cumsum(rng.choice([-1, 0, 0, 0, 1], size=int(days * 1440)))
    return list(np.clip(values - values[-1] + level, 0, None))


class LiveSource:
    """Serves ``values`` on a 60 s grid from ``start``; ``fail`` makes the next fetches fail."""

    def __init__(self, start: int, values: list[float]) -> None:
        self.start = start
        self.values = list(values)
        self.fail: str | None = None

    def append(self, *values: float) -> None:
        self.values.extend(values)

    @property
    def end(self) -> int:
        return self.start + 60 * (len(self.values) - 1)

    def fetch(
        self, pool: str, *, start: int, end: int, step_seconds: int
    ) -> tuple[DemandSeries, QualityReport]:
        if self.fail:
            raise SourceError(self.fail)
        ts = self.start + 60 * np.arange(len(self.values))
        keep = (ts >= start) & (ts <= end)
        return regularize(
            ts[keep], np.asarray(self.values)[keep], step_seconds=step_seconds, name=pool
        )


def settings(tmp_path: Path, **changes: object) -> Settings:
    document: dict[str, object] = {
        "source": {"kind": "prometheus"},
        "models_dir": str(tmp_path / "models"),
        "planning": {
            "actuation": "placeholders",  # the CapacityBuffer path: test_backends.py
            "budgets": {"max_total_prewarm_gpus": 48},
            "stale_after_seconds": 300,
            "hold_seconds": 900,
        },
        "pools": [{"name": POOL, "gpus_per_node": 8, "max_prewarm_gpus": 32}],
    }
    document.update(changes)
    return Settings.model_validate(document)
