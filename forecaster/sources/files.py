"""CSV demand series: ``timestamp,<value column>`` with ISO 8601 UTC times or epoch seconds.

Malformed files fail with a ``SourceError`` naming the file and line, never a pandas traceback.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TextIO

import numpy as np

from forecaster.core.jobs import JobTrace
from forecaster.core.quality import QualityReport, regularize
from forecaster.core.series import DemandSeries
from forecaster.errors import SourceError
from forecaster.sources.base import DEFAULT_VALUE_COLUMN


@dataclass(frozen=True)
class CsvSamples:
    """Raw rows of a CSV series, in file order."""

    timestamps: np.ndarray
    values: np.ndarray


def _open(path: Path) -> TextIO:
    """Open a CSV file for reading, or fail with a ``SourceError`` naming it."""
    try:
        return path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise SourceError(f"{path}: cannot open: {exc.strerror or exc}") from exc


def read_csv_samples(path: Path, *, value_column: str = DEFAULT_VALUE_COLUMN) -> CsvSamples:
    """Read raw samples; an empty cell or ``nan`` is a gap (NaN), anything else bad fails."""
    with _open(path) as handle:
        reader = csv.reader(handle)
        try:
            header = next(reader)
        except StopIteration:
            raise SourceError(f"{path}: file is empty (expected a header line)") from None
        except (csv.Error, UnicodeDecodeError) as exc:
            raise SourceError(f"{path}:1: not a CSV file: {exc}") from exc
        columns = [name.strip() for name in header]
        if "timestamp" not in columns or value_column not in columns:
            raise SourceError(
                f"{path}:1: header must have columns 'timestamp' and '{value_column}',"
                f" found {columns}"
            )
        t_col, v_col = columns.index("timestamp"), columns.index(value_column)
        timestamps: list[int] = []
        values: list[float] = []
        try:
            for row in reader:
                line = reader.line_num
                if not row or all(not cell.strip() for cell in row):
                    continue
                if len(row) != len(columns):
                    raise SourceError(
                        f"{path}:{line}: expected {len(columns)} fields, found {len(row)}"
                    )
                timestamps.append(_parse_timestamp(row[t_col], where=f"{path}:{line}"))
                values.append(_parse_value(row[v_col], where=f"{path}:{line}"))
        except (csv.Error, UnicodeDecodeError) as exc:
            raise SourceError(f"{path}:{reader.line_num}: not valid CSV: {exc}") from exc
    if not timestamps:
        raise SourceError(f"{path}: no data rows after the header")
    return CsvSamples(
        timestamps=np.asarray(timestamps, dtype=np.int64),
        values=np.asarray(values, dtype=np.float64),
    )


def _parse_timestamp(cell: str, *, where: str) -> int:
    text = cell.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise SourceError(f"{where}: bad timestamp {cell!r} (want ISO 8601 UTC)") from None
    if moment.tzinfo is None:
        raise SourceError(f"{where}: timestamp {cell!r} has no time zone (append 'Z' for UTC)")
    return int(moment.timestamp())


def _parse_value(cell: str, *, where: str) -> float:
    text = cell.strip()
    if text == "" or text.lower() == "nan":
        return float("nan")
    try:
        return float(text)
    except ValueError:
        raise SourceError(f"{where}: bad value {cell!r} (want a number of GPUs)") from None


class CsvSource:
    """A ``DemandSource`` over one CSV file per pool.

    Each file is parsed once and kept; it is parsed again only when it changes on disk (its
    modification time or size), so a tick, ``plan`` and training read it once, not per fetch.
    """

    def __init__(
        self,
        files: dict[str, Path],
        *,
        value_column: str = DEFAULT_VALUE_COLUMN,
        outage_min_seconds: int = 3600,
    ) -> None:
        self._files = dict(files)
        self._value_column = value_column
        self._outage_min_seconds = outage_min_seconds
        self._parsed: dict[Path, tuple[tuple[int, int], CsvSamples]] = {}

    def fetch(
        self, pool: str, *, start: int, end: int, step_seconds: int
    ) -> tuple[DemandSeries, QualityReport]:
        """Rows of the pool's file with ``start <= t <= end``, regularized."""
        if pool not in self._files:
            raise SourceError(f"no CSV file configured for pool {pool!r}")
        path = self._files[pool]
        samples = self._samples(path)
        keep = (samples.timestamps >= start) & (samples.timestamps <= end)
        if not np.any(keep):
            raise SourceError(f"{path}: no rows between the requested start and end")
        return regularize(
            samples.timestamps[keep],
            samples.values[keep],
            step_seconds=step_seconds,
            name=pool,
            outage_min_seconds=self._outage_min_seconds,
        )

    def fetch_all(self, pool: str, *, step_seconds: int) -> tuple[DemandSeries, QualityReport]:
        """The whole file of ``pool``, regularized (a file spanning more than
        ``MAX_GRID_POINTS`` steps - one row stamped 1970 - is refused naming its span)."""
        path = self._files[pool]
        samples = self._samples(path)
        try:
            return regularize(
                samples.timestamps,
                samples.values,
                step_seconds=step_seconds,
                name=pool,
                outage_min_seconds=self._outage_min_seconds,
            )
        except ValueError as exc:
            raise SourceError(f"{path}: {exc}") from exc

    def span(self, pool: str, *, step_seconds: int) -> tuple[int, int]:
        """The first and last grid times of the pool's file (``SpannedSource``)."""
        series, _ = self.fetch_all(pool, step_seconds=step_seconds)
        return series.start, series.end

    def _samples(self, path: Path) -> CsvSamples:
        try:
            stat = path.stat()
        except OSError:
            return read_csv_samples(path, value_column=self._value_column)  # its error message
        version = (stat.st_mtime_ns, stat.st_size)
        cached = self._parsed.get(path)
        if cached is None or cached[0] != version:
            cached = (version, read_csv_samples(path, value_column=self._value_column))
            self._parsed[path] = cached
        return cached[1]


JOB_COLUMNS = ("submission_time", "duration", "num_gpu")


def write_job_trace(path: Path, jobs: JobTrace, *, epoch: int) -> None:
    """``jobs`` as ``read_job_trace`` reads them (seconds since ``epoch``), written to a
    temporary file and renamed over ``path``: an interrupted export leaves no half a trace."""
    partial = path.with_name(path.name + ".partial")
    with partial.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(("job_id", *JOB_COLUMNS))
        for i in range(len(jobs)):
            writer.writerow(
                (
                    i,
                    _exact(float(jobs.submit[i]) - epoch),
                    _exact(float(jobs.duration[i])),
                    int(jobs.gpus[i]),
                )
            )
    partial.replace(path)


def _exact(seconds: float) -> str:
    """Seconds as text that reads back to the same float (whole seconds without ``.0``)."""
    return str(int(seconds)) if seconds.is_integer() else repr(seconds)


def read_job_trace(path: Path, *, epoch: int) -> JobTrace:
    """Jobs ``job_id,submission_time,duration,num_gpu`` (seconds since ``epoch``), sorted.

    Malformed rows fail with a ``SourceError`` naming the line.
    """
    with _open(path) as handle:
        reader = csv.reader(handle)
        header = [c.strip() for c in next(reader, [])]
        missing = [c for c in JOB_COLUMNS if c not in header]
        if missing:
            raise SourceError(f"{path}:1: job trace header lacks {missing}, found {header}")
        index = [header.index(c) for c in JOB_COLUMNS]
        rows: list[tuple[float, float, int]] = []
        for row in reader:
            if not row:
                continue
            where = f"{path}:{reader.line_num}"
            try:
                submit, duration, gpus = (row[i].strip() for i in index)
                item = (float(submit), float(duration), int(gpus))
            except (ValueError, IndexError):
                raise SourceError(f"{where}: bad job row {row!r}") from None
            if item[1] < 0 or item[2] <= 0:
                raise SourceError(f"{where}: duration must be >= 0 and num_gpu > 0")
            rows.append(item)
    if not rows:
        raise SourceError(f"{path}: no jobs")
    rows.sort()
    table = np.array(rows, dtype=np.float64)
    return JobTrace(
        submit=table[:, 0] + epoch, duration=table[:, 1], gpus=table[:, 2].astype(np.int64)
    )
