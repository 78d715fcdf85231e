#!/usr/bin/env bash
# Configures and builds DeepCanvas into ./build (binaries in build/bin).
# Extra arguments go to CMake, e.g. ./build.sh -DDEEPCANVAS_GUI=OFF
set -euo pipefail
cd "$(dirname "$0")"
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$BUILD_DIR" -j"$(nproc)"
