"""One version, one release command.

The version lives in ``forecaster/__init__.py`` (``__version__``; ``pyproject.toml`` reads it).
Everything that names it - the chart's ``version`` and ``appVersion``, the Kustomize image tag and
the base manifests' image references - must say the same; ``--check`` exits 1 naming each file
that does not (a test runs it), ``--set-version`` writes it everywhere.

A release packages the chart (``helm package``) and, unless ``--skip-image``, builds the image
from ``deploy/Dockerfile`` with ``buildah`` (Docker is not needed), then prints each artifact
and its sha256 digest:

    .venv/bin/python scripts/release.py [--out out/release] [--skip-image] [--base IMAGE]
    .venv/bin/python scripts/release.py --check
    .venv/bin/python scripts/release.py --set-version 0.2.0
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INIT = ROOT / "forecaster" / "__init__.py"
CHART = ROOT / "deploy" / "helm" / "forecaster"
HELM = ROOT / ".venv-tools" / "bin" / "helm"
IMAGE = "ghcr.io/example/forecaster"
PLACES = {
    CHART / "Chart.yaml": (r"(?m)^version: (\S+)$", r'(?m)^appVersion: "([^"]+)"$'),
    ROOT / "deploy" / "base" / "kustomization.yaml": (r'(?m)^    newTag: "([^"]+)"$',),
    **{
        ROOT / "deploy" / "base" / name: (rf"(?m)image: {re.escape(IMAGE)}:(\S+)$",)
        for name in (
            "deployment.yaml",
            "cronjob.yaml",
            "expiry-cronjob.yaml",
            "uninstall-cronjob.yaml",
        )
    },
}
"""Each file that names the version, and the patterns whose one group is it."""


def version() -> str:
    found = re.search(r'(?m)^__version__ = "([^"]+)"$', INIT.read_text())
    if found is None:
        raise SystemExit(f"release: no __version__ in {INIT}")
    return found.group(1)


def mismatches(expected: str) -> list[str]:
    """``file: names X`` for every place that does not say ``expected``."""
    out = []
    for path, patterns in PLACES.items():
        text = path.read_text()
        for pattern in patterns:
            named = re.findall(pattern, text)
            if not named:
                out.append(f"{path.relative_to(ROOT)}: no version found ({pattern})")
            out.extend(
                f"{path.relative_to(ROOT)}: names {n}, not {expected}"
                for n in named
                if n != expected
            )
    return out


def set_version(new: str) -> None:
    if not re.fullmatch(r"\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?", new):
        raise SystemExit(f"release: {new!r} is not a semantic version (MAJOR.MINOR.PATCH)")
    INIT.write_text(
        re.sub(r'(?m)^__version__ = "[^"]+"$', f'__version__ = "{new}"', INIT.read_text())
    )
    for path, patterns in PLACES.items():
        text = path.read_text()
        for pattern in patterns:
            text = re.sub(pattern, lambda m: m.group(0).replace(m.group(1), new), text)
        path.write_text(text)


def sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def package_chart(out: Path, release: str) -> Path:
    helm = str(HELM) if HELM.exists() else shutil.which("helm")
    if helm is None:
        raise SystemExit("release: helm not found (scripts/setup installs it in .venv-tools)")
    subprocess.run(
        [helm, "package", str(CHART), "--destination", str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    return out / f"forecaster-{release}.tgz"


def build_image(release: str, base: str | None) -> str:
    buildah = shutil.which("buildah")
    if buildah is None:
        raise SystemExit("release: buildah not found (apt-get install buildah), or --skip-image")
    tag = f"{IMAGE}:{release}"
    command = [buildah, "bud", "--isolation", "chroot", "-f", "deploy/Dockerfile", "-t", tag]
    if base:
        command += ["--build-arg", f"BASE={base}"]
    subprocess.run([*command, "."], check=True, cwd=ROOT)
    digest = subprocess.run(
        [buildah, "inspect", "--format", "{{.FromImageDigest}}", tag],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return f"{tag} {digest}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "release")
    parser.add_argument("--skip-image", action="store_true", help="package the chart only")
    parser.add_argument("--base", help="the Dockerfile's BASE image (default: its own)")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every place agrees")
    parser.add_argument("--set-version", help="write this version everywhere it is named")
    args = parser.parse_args(argv)
    if args.set_version:
        set_version(args.set_version)
        print(f"release: version {args.set_version} written to {len(PLACES) + 1} files")
        return 0
    release = version()
    wrong = mismatches(release)
    for line in wrong:
        print(f"release: {line}", file=sys.stderr)
    if wrong or args.check:
        return 1 if wrong else 0
    args.out.mkdir(parents=True, exist_ok=True)
    chart = package_chart(args.out, release)
    print(f"chart {chart} {sha256(chart)}")
    if not args.skip_image:
        print(f"image {build_image(release, args.base)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
