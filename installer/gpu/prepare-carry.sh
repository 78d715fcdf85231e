#!/bin/bash
# Run on the development machine: gathers what the bare GPU machine lacks
# into one git-ignored folder (default ./carry) that travels with the tree:
# GoogleTest sources, nlohmann-json headers, the system libraries the engine
# links (OpenBLAS, oneDNN, zlib; compressed) and, when installed, the full
# Fashion-MNIST set. installer/gpu/run-on-gpu.sh consumes it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/carry}
rm -rf "$OUT"
mkdir -p "$OUT/include" "$OUT/json" "$OUT/fashion-mnist"
cp -r /usr/src/googletest "$OUT/googletest"
# Their own tests and samples are never built here, and a call carries at
# most 64 MiB with the tree.
rm -rf "$OUT/googletest/googletest/test" "$OUT/googletest/googlemock/test" \
  "$OUT/googletest/googletest/samples"
cp -r /usr/include/nlohmann "$OUT/json/"

# Headers and libraries of the engine's link line that a CUDA-only image has
# no package for. x86-64 Debian 12 builds; newer glibc runs them.
cp /usr/include/x86_64-linux-gnu/openblas-openmp/*.h "$OUT/include/"
cp /usr/include/zlib.h /usr/include/zconf.h "$OUT/include/"
cp /usr/include/dnnl*.h "$OUT/include/" 2>/dev/null || true
cp -r /usr/include/oneapi "$OUT/include/" 2>/dev/null || true
LIBS=$(mktemp -d)
ML=/usr/lib/x86_64-linux-gnu
cp -L "$ML/openblas-openmp/libopenblas.so.0" "$LIBS/"
for l in libgfortran.so.5 libquadmath.so.0 libz.so.1 libdnnl.so.2 libOpenCL.so.1; do
  [ -e "$ML/$l" ] && cp -L "$ML/$l" "$LIBS/"
done
tar -C "$LIBS" -cJf "$OUT/syslibs.tar.xz" .
rm -rf "$LIBS"

if [ -d /usr/share/datasets/fashion-mnist ]; then
  cp /usr/share/datasets/fashion-mnist/*-ubyte* "$OUT/fashion-mnist/"
fi
du -sh "$OUT"
echo "carry ready: $OUT (git-ignored; name it in the device tool's carry list)"
