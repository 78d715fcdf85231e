#!/usr/bin/env bash
# Installs every build, test and benchmark dependency of DeepCanvas from
# Debian 12 packages. Idempotent: packages already present are skipped, and
# apt-get is only called when something is missing, so CI re-runs are cheap.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  qt6-base-dev libqt6svg6 qt6-image-formats-plugins libqcustomplot-dev
  libopencv-dev libjpeg-dev nlohmann-json3-dev libgtest-dev libgmock-dev
  libopenblas-openmp-dev libdnnl-dev zlib1g-dev
  clang-14 libclang-rt-14-dev
  dataset-fashion-mnist python3 python3-torch python3-numpy
  libonnx-dev libprotobuf-dev python3-onnx python3-torchvision python3-yaml
  libgraphviz-dev
  xvfb openbox x11-apps imagemagick xauth xdotool
  dpkg-dev lintian file
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
