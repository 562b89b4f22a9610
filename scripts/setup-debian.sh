#!/usr/bin/env bash
# Installs the Debian packages plan builds and tests with (the only install step; see README).
set -euo pipefail
pkgs=(build-essential pkg-config meson ninja-build
      libjansson-dev libcmocka-dev libcsv-dev libgsl-dev libyaml-dev libcairo2-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
