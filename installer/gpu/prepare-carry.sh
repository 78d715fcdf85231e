#!/bin/bash
# Run on the development machine: gathers what the bare GPU machine lacks
# into one git-ignored folder (default ./carry) that travels with the tree:
# GoogleTest sources, nlohmann-json headers, the system libraries the engine
# links (OpenBLAS, oneDNN, zlib; compressed) and, when installed, the full
# Fashion-MNIST set. installer/gpu/run-on-gpu.sh consumes it.
#   installer/gpu/prepare-carry.sh [--photos] [OUT]
# --photos: OpenCV's core and imgproc and libjpeg instead of Fashion-MNIST,
# for the photo-folder figures (run-on-gpu.sh --skip advisor,peers,tta
# --gtest-filter 'CudaAugment.*:CudaTraining.EveryStep*': the streamed path's parity tests, then the folder):
# a call carries at most 64 MiB with the tree, which does not hold both.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PHOTOS=0
[ "${1:-}" = --photos ] && { PHOTOS=1; shift; }
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

# OpenCV's core and imgproc and libjpeg, for the photo-folder figures: the
# engine resizes pictures with imgproc and decodes JPEGs with libjpeg.
# imgcodecs stays behind (with GDAL behind it, about 200 MB); the engine
# then reads JPEG files only (cmake/Dependencies.cmake). deps/ holds what
# those libraries need; run-on-gpu.sh takes from it only what the machine
# lacks, so nothing shadows the machine's own copies.
if [ "$PHOTOS" = 1 ]; then
  if [ ! -e "$ML/libopencv_imgproc.so.406" ] || [ ! -e /usr/include/jpeglib.h ]; then
    echo "--photos needs libopencv-dev and libjpeg-dev (installer/install-deps.sh)" >&2
    exit 1
  fi
  CV=$(mktemp -d)
  mkdir -p "$CV/lib/deps" "$CV/include/opencv4/opencv2"
  cp -r /usr/include/opencv4/opencv2/{core,core.hpp,imgproc,imgproc.hpp,opencv_modules.hpp} \
    "$CV/include/opencv4/opencv2/"
  cp /usr/include/{jpeglib.h,jmorecfg.h,jerror.h} /usr/include/x86_64-linux-gnu/jconfig.h \
    "$CV/include/"
  cp -L "$ML"/{libopencv_core.so.406,libopencv_imgproc.so.406,libjpeg.so.62} "$CV/lib/"
  for l in $(ldd "$ML/libopencv_imgproc.so.406" | awk '$3 ~ /^\// {print $3}'); do
    case $(basename "$l") in
      # The C and C++ runtimes, and what syslibs.tar.xz already has.
      libc.so*|libm.so*|libstdc++*|libgcc_s*|libopencv_*|ld-linux*) ;;
      libopenblas*|libgfortran*|libquadmath*|libz.so*) ;;
      *) cp -L "$l" "$CV/lib/deps/" ;;
    esac
  done
  tar -C "$CV" -cJf "$OUT/opencv.tar.xz" .
  rm -rf "$CV"
fi

if [ "$PHOTOS" = 0 ] && [ -d /usr/share/datasets/fashion-mnist ]; then
  cp /usr/share/datasets/fashion-mnist/*-ubyte* "$OUT/fashion-mnist/"
fi
du -sh "$OUT"
echo "with the tracked tree: $(( ($(du -sb "$OUT" | cut -f1) + $(cd "$ROOT" && git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1)) >> 20 )) MiB (a call carries at most 64)"
echo "carry ready: $OUT (git-ignored; name it in the device tool's carry list)"
