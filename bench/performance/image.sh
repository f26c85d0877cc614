#!/usr/bin/env bash
# Build deploy/Dockerfile here and run the image as it runs in a cluster: non-root (uid 10001),
# read-only root, /tmp a tmpfs. Not in CI (it downloads a Debian base and the Python wheels).
#
# No Docker daemon and no upstream base image can be pulled on this machine, so:
# * the base is a Debian 12 root made by debootstrap (its python3 is 3.11, as python:3.11-slim),
#   imported into buildah (storage driver vfs, chroot isolation: no daemon, no overlay mounts);
# * the image is built by buildah from deploy/Dockerfile with BASE set to that import;
# * it is run with podman when podman can start a container here, else with chroot on the
#   image's unpacked root (mounted read-only, tmpfs /tmp, --userspec 10001:10001) - the line
#   "run with:" says which.
# Prints: build time, image size (and the training-only part), `forecaster --version`, the
# embedded default's /healthz and /api/v1/status.
# Run: bench/performance/image.sh   (as root; installs buildah, podman, debootstrap if missing)
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${WORK:-/tmp/forecaster-image}
version=$(.venv/bin/python -c 'import forecaster; print(forecaster.__version__)')
export STORAGE_DRIVER=vfs BUILDAH_ISOLATION=chroot
mkdir -p "$work"

missing=()
for tool in buildah podman debootstrap; do command -v $tool >/dev/null || missing+=($tool); done
if [ ${#missing[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

base=localhost/debian12-python:local
if ! buildah inspect --type image "$base" >/dev/null 2>&1; then
  began=$(date +%s)
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  if [ ! -x "$work/root/usr/bin/python3" ]; then
    rm -rf "$work/root"
    debootstrap --variant=minbase --include=python3,python3-venv,python-is-python3,ca-certificates \
      bookworm "$work/root" "${mirror:-http://deb.debian.org/debian}" >"$work/debootstrap.log"
    rm -rf "$work/root/var/cache/apt/archives"/*.deb "$work/root/var/lib/apt/lists"/*
  fi
  # this machine reaches PyPI through a TLS-inspecting proxy: the build trusts the same CAs the
  # host does (only in this bench's base; a user's base needs nothing of it)
  if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
    cp /usr/local/share/ca-certificates/*.crt "$work/root/usr/local/share/ca-certificates/"
    chroot "$work/root" update-ca-certificates >/dev/null 2>&1
    printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$work/root/etc/pip.conf"
  fi
  tar -C "$work/root" -cf "$work/root.tar" .
  ctr=$(buildah from scratch)
  buildah add "$ctr" "$work/root.tar" / >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
  buildah commit --quiet "$ctr" "$base" >/dev/null
  buildah rm "$ctr" >/dev/null
  echo "base: $base from debootstrap bookworm in $(( $(date +%s) - began )) s"
fi

began=$(date +%s)
if [ "${REBUILD:-0}" = 1 ] || ! buildah inspect --type image "localhost/forecaster:$version" >/dev/null 2>&1; then
buildah bud --quiet --layers=false --build-arg BASE="$base" -f deploy/Dockerfile \
  -t "localhost/forecaster:$version" . >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
echo "build: $(( $(date +%s) - began )) s"
else
  echo "build: kept localhost/forecaster:$version (REBUILD=1 builds it again)"
fi
size() { buildah inspect --type image --format '{{.Docker.Size}}' "$1" 2>/dev/null || echo 0; }
image_mib=$(buildah images --format '{{.Size}}' "localhost/forecaster:$version" | head -1)
base_mib=$(buildah images --format '{{.Size}}' "$base" | head -1)
echo "size: image $image_mib (base $base_mib)"

# what the training-only libraries weigh inside it (prophet, cmdstan, statsmodels, sklearn, pandas)
ctr=$(buildah from "localhost/forecaster:$version")
root=$(buildah mount "$ctr")
site=$(ls -d "$root"/opt/forecaster/lib/python3*/site-packages)
echo "venv: $(du -sm "$root/opt/forecaster" | cut -f1) MiB; of it training-only:" \
  "$(du -smc "$site"/prophet "$site"/cmdstanpy "$site"/statsmodels "$site"/sklearn "$site"/scipy \
     "$site"/pandas "$site"/matplotlib 2>/dev/null | tail -1 | cut -f1) MiB" \
  "(prophet, cmdstanpy, statsmodels, sklearn, scipy, pandas, matplotlib)"

port=18080
runner=""
if podman run --rm --read-only --user 10001:10001 --tmpfs /tmp "localhost/forecaster:$version" \
     --version >"$work/podman.log" 2>&1; then
  runner=podman
  echo "run with: podman (--read-only --user 10001:10001 --tmpfs /tmp)"
  echo "version: $(cat "$work/podman.log")"
  podman run -d --name forecaster-bench --network host --read-only --user 10001:10001 \
    --tmpfs /tmp "localhost/forecaster:$version" \
    run --config /opt/forecaster/share/config/forecaster.yaml --port $port --duration 90s >/dev/null
else
  runner=chroot
  echo "run with: chroot on the image root, read-only bind, tmpfs /tmp, uid 10001 (podman here:" \
    "$(tail -1 "$work/podman.log"))"
  ro="$work/ro"
  mkdir -p "$ro"
  mount --bind "$root" "$ro" && mount -o remount,bind,ro "$ro"
  mount -t tmpfs tmpfs "$ro/tmp"
  mount -t proc proc "$ro/proc"
  mount -t tmpfs tmpfs "$ro/dev/shm" 2>/dev/null || true  # as a pod has: joblib wants it
  echo "version: $(chroot --userspec=10001:10001 "$ro" /opt/forecaster/bin/forecaster --version)"
  touch "$ro/probe" 2>/dev/null && echo "root is writable: FAIL" || echo "root is read-only: ok"
  (cd / && chroot --userspec=10001:10001 "$ro" env HOME=/tmp MPLCONFIGDIR=/tmp OMP_NUM_THREADS=1 \
     /opt/forecaster/bin/forecaster run --config /opt/forecaster/share/config/forecaster.yaml \
     --port $port --duration 60s >"$work/run.log" 2>&1 &)
fi
healthy=""
for _ in $(seq 1 600); do  # the warm-up (14 simulated days, the first training) comes first
  if code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz") && [ "$code" = 200 ]; then
    healthy=$code; break
  fi
  sleep 1
done
echo "healthz: ${healthy:-no answer in 600 s}"
sleep 5
curl -s "http://127.0.0.1:$port/api/v1/status" | head -c 300 || true; echo
if [ "$runner" = podman ]; then podman rm -f forecaster-bench >/dev/null; else
  pkill -f "forecaster run --config /opt/forecaster/share" || true
  sleep 2
  umount "$ro/dev/shm" "$ro/proc" "$ro/tmp" "$ro" 2>/dev/null || true
fi
buildah umount "$ctr" >/dev/null; buildah rm "$ctr" >/dev/null
