#!/usr/bin/env bash
# The whole test suite, as CI runs it: install dependencies (idempotent),
# build with tests, run every test. GUI tests run offscreen; CUDA tests skip
# themselves (and say so) when there is no GPU.
set -euo pipefail
cd "$(dirname "$0")"
./installer/install-deps.sh
# onnxruntime for the ONNX export tests (PyPI; without a network they skip
# and say so).
./installer/verify-venv.sh || echo "run-tests: no onnxruntime (offline?); its ONNX checks will skip"
./build.sh -DBUILD_TESTING=ON
export QT_QPA_PLATFORM=offscreen
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j"$(nproc)"
