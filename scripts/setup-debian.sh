#!/usr/bin/env bash
# Installs the Debian packages plan builds and tests with, then configures the Meson build
# directory `build/` (once). The README's two commands start with this script.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(build-essential pkg-config meson ninja-build
      libjansson-dev libcmocka-dev libcsv-dev libgsl-dev libyaml-dev libcairo2-dev
      libopenmpi-dev openmpi-bin)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# Chromium (optional) lets `meson test test_report_render` screenshot the report as a reader sees
# it; without it that test skips. Without recommended packages it installs in about 20 s (about
# 350 MB) and runs headless as is. PLAN_SETUP_NO_CHROMIUM=1 leaves it out; a failure is not fatal.
if [ -z "${PLAN_SETUP_NO_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "setup: installing chromium (optional, for the report's screenshot test)" >&2
  { $SUDO apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium \
      >/dev/null; } || echo "setup: chromium not installed: test_report_render will skip" >&2
fi
if [ ! -f build/build.ninja ]; then
  rm -rf build
  meson setup build >/dev/null
  echo "setup: configured build/ ($(grep -c '^build ' build/build.ninja) build edges)" >&2
fi
