"""One version, one release command (``scripts/release.py``).

Every place that names the version says ``forecaster.__version__`` (the package's metadata reads
it too); a place that drifts is named by ``--check``; ``--set-version`` writes every place; the
release packages the chart with the real helm and prints its sha256 digest (the image build is
``buildah``'s, left to the bench).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import forecaster

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "release.py"


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(cwd / "scripts" / "release.py"), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_every_place_names_the_one_version() -> None:
    assert importlib.metadata.version("forecaster") == forecaster.__version__
    done = run("--check")
    assert done.returncode == 0, done.stderr


def test_a_drifted_place_is_named_and_set_version_writes_them_all(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    for part in ("forecaster/__init__.py", "scripts/release.py"):
        (copy / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / part, copy / part)
    shutil.copytree(ROOT / "deploy", copy / "deploy")
    chart = copy / "deploy/helm/forecaster/Chart.yaml"
    chart.write_text(chart.read_text().replace("appVersion: ", 'appVersion: "9.9.9"\nx: ', 1))
    done = run("--check", cwd=copy)
    assert done.returncode == 1 and "Chart.yaml: names 9.9.9" in done.stderr, done.stderr
    assert run("--set-version", "0.2.0", cwd=copy).returncode == 0
    assert run("--check", cwd=copy).returncode == 0
    assert '__version__ = "0.2.0"' in (copy / "forecaster/__init__.py").read_text()
    assert 'newTag: "0.2.0"' in (copy / "deploy/base/kustomization.yaml").read_text()


@pytest.mark.skipif(
    not (ROOT / ".venv-tools" / "bin" / "helm").exists(), reason="helm: scripts/setup installs it"
)
def test_the_release_packages_the_chart_and_prints_its_digest(tmp_path: Path) -> None:
    done = run("--skip-image", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    packaged = tmp_path / f"forecaster-{forecaster.__version__}.tgz"
    digest = "sha256:" + hashlib.sha256(packaged.read_bytes()).hexdigest()
    assert done.stdout.strip() == f"chart {packaged} {digest}"
