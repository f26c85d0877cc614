"""CSV source: good files in both timestamp styles, and one-line errors naming file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from forecaster.errors import SourceError
from forecaster.sources import files
from forecaster.sources.files import CsvSource, read_csv_samples


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pool.csv"
    path.write_text(text)
    return path


def test_reads_iso_and_epoch_timestamps_and_named_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "timestamp,gpus\n2026-01-01T00:00:00Z,4\n1767225660,5\n\n")
    samples = read_csv_samples(path, value_column="gpus")
    assert samples.timestamps.tolist() == [1767225600, 1767225660]
    assert samples.values.tolist() == [4.0, 5.0]


def test_empty_cells_and_nan_are_gaps(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "timestamp,gpus_requested\n2026-01-01T00:00:00Z,4\n2026-01-01T00:01:00Z,\n"
        "2026-01-01T00:02:00Z,NaN\n2026-01-01T00:03:00Z,2\n",
    )
    series, report = CsvSource({"p": path}).fetch_all("p", step_seconds=60)
    assert np.isnan(series.values[1:3]).all() and report.non_finite == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"pool.csv: file is empty"),
        ("time,gpus_requested\n", r"pool.csv:1: header must have columns 'timestamp'"),
        ("timestamp,gpus_requested\n", r"pool.csv: no data rows"),
        (
            "timestamp,gpus_requested\n2026-01-01T00:00:00Z,4\nyesterday,5\n",
            r"pool.csv:3: bad timestamp 'yesterday'",
        ),
        (
            "timestamp,gpus_requested\n2026-01-01T00:00:00Z,4\n2026-01-01T00:01:00Z,four\n",
            r"pool.csv:3: bad value 'four'",
        ),
        (
            "timestamp,gpus_requested\n2026-01-01T00:00:00Z,4,9\n",
            r"pool.csv:2: expected 2 fields, found 3",
        ),
        ("timestamp,gpus_requested\n2026-01-01T00:00:00,4\n", r"pool.csv:2: .* no time zone"),
    ],
)
def test_malformed_files_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SourceError, match=message) as info:
        read_csv_samples(path)
    assert "\n" not in str(info.value)


def test_missing_file_and_unknown_pool(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"nope.csv: cannot open"):
        read_csv_samples(tmp_path / "nope.csv")
    with pytest.raises(SourceError, match=r"no CSV file configured for pool 'x'"):
        CsvSource({}).fetch("x", start=0, end=1, step_seconds=60)


def test_fetch_filters_the_window(tmp_path: Path) -> None:
    rows = "".join(f"{1767225600 + 60 * i},{i}\n" for i in range(10))
    path = write(tmp_path, "timestamp,gpus_requested\n" + rows)
    series, _ = CsvSource({"p": path}).fetch(
        "p", start=1767225600 + 120, end=1767225600 + 300, step_seconds=60
    )
    assert series.values.tolist() == [2.0, 3.0, 4.0, 5.0]
    with pytest.raises(SourceError, match="no rows between"):
        CsvSource({"p": path}).fetch("p", start=0, end=10, step_seconds=60)


def test_a_file_is_parsed_once_until_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.csv"
    path.write_text("timestamp,gpus_requested\n0,1\n60,2\n120,3\n")
    reads = []
    real = files.read_csv_samples

    def counting(*args: Any, **kwargs: Any) -> Any:
        reads.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(files, "read_csv_samples", counting)
    source = files.CsvSource({"a": path})
    source.fetch_all("a", step_seconds=60)
    source.fetch("a", start=0, end=120, step_seconds=60)
    source.fetch("a", start=60, end=120, step_seconds=60)
    assert len(reads) == 1
    path.write_text("timestamp,gpus_requested\n0,1\n60,2\n120,3\n180,9\n")
    series, _ = source.fetch_all("a", step_seconds=60)
    assert len(reads) == 2 and series.values[-1] == 9


def test_a_file_with_a_row_from_1970_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "demand.csv"
    path.write_text("timestamp,gpus_requested\n1970-01-01T00:01:00Z,8\n2026-11-30T00:00:00Z,8\n")
    with pytest.raises(SourceError, match=r"demand\.csv: .*from 1970-01-01T00:01:00Z to 2026"):
        CsvSource({"a": path}).fetch_all("a", step_seconds=60)
