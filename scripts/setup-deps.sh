#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Installs the Debian packages the build and the tests need; does nothing
# when they are all present already (so a second run is instant).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  qt6-base-dev libqt6sql6-sqlite libqcustomplot-dev libqcustomplot2.1-qt6
  xvfb xauth
  libdnnl-dev ocl-icd-opencl-dev libopenblas-dev
  nlohmann-json3-dev libsqlite3-dev zlib1g-dev
  libonnx-dev libprotobuf-dev python3-onnx
  python3-torch python3-torchvision
  libpng-dev libjpeg62-turbo-dev
  libgloo-dev slurmctld slurmd slurm-client iproute2
  dataset-fashion-mnist
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
