#!/usr/bin/env bash
# The whole test suite, as CI runs it: install dependencies (idempotent),
# build with tests, run every test. GUI tests run offscreen; CUDA tests skip
# themselves (and say so) when there is no GPU.
# Then the reliability pass (issue 17): the engine, CLI and their tests built
# with clang, AddressSanitizer, UBSan and libFuzzer coverage in a second
# folder (SAN_BUILD_DIR, build-san; GUI and CUDA off), its engine and e2e
# tests run there, and each fuzz target for FUZZ_SECONDS (30) over its seed
# corpus, and a ThreadSanitizer pass (tests/tsan/run_tsan.sh, build-tsan).
# SKIP_SANITIZERS=1 leaves both passes out.
set -euo pipefail
cd "$(dirname "$0")"
./installer/install-deps.sh
# onnxruntime for the ONNX export tests (PyPI; without a network they skip
# and say so).
./installer/verify-venv.sh || echo "run-tests: no onnxruntime (offline?); its ONNX checks will skip"
./build.sh -DBUILD_TESTING=ON
export QT_QPA_PLATFORM=offscreen
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j"$(nproc)"

if [ "${SKIP_SANITIZERS:-0}" = 1 ]; then
  exit 0
fi
SAN_BUILD_DIR=${SAN_BUILD_DIR:-build-san}
cmake -S . -B "$SAN_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DDEEPCANVAS_FUZZ=ON -DDEEPCANVAS_GUI=OFF -DDEEPCANVAS_CUDA=OFF \
  -DDEEPCANVAS_FUZZ_SECONDS="${FUZZ_SECONDS:-30}"
cmake --build "$SAN_BUILD_DIR" -j"$(nproc)"
# The package test needs the GUI and repeats the normal build's; the
# PyTorch/onnxruntime comparisons (and the PyTorch export's forward and
# torchrun checks) are numerics the normal build checks and spend their time
# in Python; the train-to-accuracy run is a long training loop whose code
# the shorter CLI runs (resume, divergence, interrupt) already take through,
# and under ASan it alone took 15 minutes on 2 busy cores. The rest (engine,
# e2e, ONNX export and import, fuzz) is what the sanitizers are for.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
  ctest --test-dir "$SAN_BUILD_DIR" --output-on-failure -j"$(nproc)" \
  -E '^Installer\.|TorchReference|OnnxRuntime|PyTorchExport\.(Forward|Torchrun)|Cli\.TrainsTheSampleProjectToAUsefulAccuracy'

# ThreadSanitizer on what runs on several threads (trainer thread and its
# channel, loader, parallel sweep trials, SIGINT): its own build folder
# (build-tsan). SKIP_TSAN=1 leaves it out.
if [ "${SKIP_TSAN:-0}" != 1 ]; then
  tests/tsan/run_tsan.sh "${TSAN_BUILD_DIR:-build-tsan}"
fi
