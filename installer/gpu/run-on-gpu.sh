#!/bin/bash
# Run on the bare GPU machine (C++ compiler, CMake, Ninja, CUDA toolkit,
# Python with PyTorch; no Qt, OpenCV, GoogleTest or nlohmann-json, no
# network), from the repository root, after installer/gpu/prepare-carry.sh
# filled ./carry on a development machine. Builds the engine, the CUDA
# plugin, the CLI and the tests; runs the CUDA tests and the GPU
# micro-benchmark, then (unless --no-bench) the advisor's GPU rows
# (bench/advisor_accuracy.py --device cuda), DeepCanvas against PyTorch's
# strong peers (bench/gpu_peers.py: eager, whole-step CUDA graph with fused
# Adam, torch.compile reduce-overhead; each in its own process, alternating,
# repeated) and the time to 91 % over 5 seeds; prints a summary last. Logs
# and raw results go to $DC_LOG_DIR (default build-gpu/logs).
#   installer/gpu/run-on-gpu.sh [--no-bench] [--engine-tests] [--gtest-filter PATTERN]
#       [--deadline S] [--peers-budget S] [--skip tests,advisor,peers,tta,folder]
#       [--peers eager,graph,compile] [--configs cnn:fp32,...] [--repeats N] [--tta-sides LIST]
#       (--configs also takes lite0:bf16 (the EfficientNet-Lite0 transfer template, frozen
#        base, 224 px, batch 64) and mnv2:bf16 (MobileNetV2, 96 px, batch 128), on seeded
#        noise that bench/make_synthetic_idx.py makes once into $DC_SYNTHETIC_DIR (default
#        $BUILD/synthetic; --ab set new reads the same): 1.3 GB, a few seconds; their
#        accuracy means nothing, their samples/s does)
#       [--profile vgg:bf16,...]  (each config's kernels under Nsight Compute: bench/kernel_profile.py)
#       [--ab ROUNDS]  (the plugin's convolution and recurrent paths against each
#                       other before the peers: bench/gpu_conv_paths.sh)
#       [--ab-set paths|fuse|new|pw]  (which variants --ab compares: bench/gpu_conv_paths.sh)
# The machine's copy of .git is not this session's latest: pass
# DC_COMMIT=<hash> in the command, or the raw results name an older commit.
# --deadline S: the whole script should end within S seconds of its start
# (a lease's call limit): the benchmarks start no new process once their
# share is spent and report what they measured. [--legacy-bench [--epochs N] [--lstm-epochs N]]
# DC_ADVISOR_ARGS: more arguments for bench/advisor_accuracy.py (e.g.
# "--templates two_conv_cnn,lenet5 --samples 4096": the memory rows a host
# test pins, in seconds instead of minutes).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CARRY=${DC_CARRY:-$ROOT/carry}
BUILD=${DC_BUILD:-$ROOT/build-gpu}
LOGS=${DC_LOG_DIR:-$BUILD/logs}
BENCH=1 ENGINE_TESTS=0 EPOCHS=8 LSTM_EPOCHS=5 FILTER='*' LEGACY=0 SKIP="" PEERS_BUDGET="" DEADLINE=0
PEERS=eager,graph,compile CONFIGS=cnn:fp32,cnn:bf16,lstm:fp32,lstm:bf16,vgg:bf16,resnet:bf16 REPEATS=3
TTA_SIDES=deepcanvas,graph,compile PROFILE="" AB=0 AB_SET=paths
while [ $# -gt 0 ]; do
  case $1 in
    --no-bench) BENCH=0 ;;
    --legacy-bench) LEGACY=1 ;;
    --skip) SKIP=$2; shift ;;
    --peers-budget) PEERS_BUDGET=$2; shift ;;
    --deadline) DEADLINE=$2; shift ;;
    --peers) PEERS=$2; shift ;;
    --configs) CONFIGS=$2; shift ;;
    --repeats) REPEATS=$2; shift ;;
    --tta-sides) TTA_SIDES=$2; shift ;;
    --profile) PROFILE=$2; shift ;;
    --ab) AB=$2; shift ;;
    --ab-set) AB_SET=$2; shift ;;
    --engine-tests) ENGINE_TESTS=1 ;;
    --epochs) EPOCHS=$2; shift ;;
    --lstm-epochs) LSTM_EPOCHS=$2; shift ;;
    --gtest-filter) FILTER=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$LOGS"
declare -A RESULT
step() { echo "=== $1 (at ${SECONDS} s)"; }

[ -d "$CARRY/googletest" ] || { echo "no $CARRY/googletest: run installer/gpu/prepare-carry.sh first" >&2; exit 1; }
SYS=$BUILD/sys
mkdir -p "$SYS/lib" "$SYS/include"
tar -xJf "$CARRY/syslibs.tar.xz" -C "$SYS/lib"
cp -r "$CARRY/include/." "$SYS/include/"
(cd "$SYS/lib" && for f in *.so.*; do ln -sf "$f" "${f%%.so.*}.so"; done)
export LIBRARY_PATH=$SYS/lib${LIBRARY_PATH:+:$LIBRARY_PATH}
export LD_LIBRARY_PATH=$SYS/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CPATH=$SYS/include${CPATH:+:$CPATH}
export PATH=/usr/local/cuda/bin:$PATH

# cuDNN: the toolkit's, else the one PyTorch's wheels bring.
CUDNN_ROOT=""
for d in /usr/local/cuda /usr; do
  [ -e "$d/include/cudnn.h" ] && { CUDNN_ROOT=$d; break; }
done
if [ -z "$CUDNN_ROOT" ]; then
  h=$(python3 -c 'import nvidia.cudnn, os; print(list(nvidia.cudnn.__path__)[0])' 2>/dev/null)
  [ -n "$h" ] && [ -e "$h/include/cudnn.h" ] && CUDNN_ROOT=$h
fi
echo "cuDNN: ${CUDNN_ROOT:-not found}"
[ -n "$CUDNN_ROOT" ] && export LD_LIBRARY_PATH=$CUDNN_ROOT/lib:$CUDNN_ROOT/lib64:$LD_LIBRARY_PATH
if [ -n "$CUDNN_ROOT" ] && [ ! -e "$CUDNN_ROOT/lib/libcudnn.so" ] && [ -e "$CUDNN_ROOT/lib/libcudnn.so.9" ]; then
  ln -sf "$CUDNN_ROOT/lib/libcudnn.so.9" "$SYS/lib/libcudnn.so"
fi

# OpenCV's core and imgproc and libjpeg, when the carry has them (the
# photo-folder figures): the libraries themselves, and of what they need
# only what this machine lacks.
OPENCV=OFF
if [ -f "$CARRY/opencv.tar.xz" ]; then
  mkdir -p "$SYS/opencv"
  tar -xJf "$CARRY/opencv.tar.xz" -C "$SYS/opencv"
  cp -r "$SYS/opencv/include/." "$SYS/include/"
  cp "$SYS/opencv/lib/"*.so.* "$SYS/lib/"
  (cd "$SYS/lib" && for f in libopencv_*.so.* libjpeg.so.*; do ln -sf "$f" "${f%%.so.*}.so"; done)
  for _ in 1 2 3 4; do
    missing=$(ldd "$SYS/lib/libopencv_imgproc.so.406" | awk '/not found/ {print $1}')
    [ -z "$missing" ] && break
    for l in $missing; do cp "$SYS/opencv/lib/deps/$l" "$SYS/lib/" 2>/dev/null; done
  done
  if ldd "$SYS/lib/libopencv_imgproc.so.406" | grep -q "not found"; then
    echo "OpenCV: still missing $(ldd "$SYS/lib/libopencv_imgproc.so.406" | awk '/not found/ {print $1}' | tr '\n' ' ')"
  else
    OPENCV=JPEG
    echo "OpenCV core and imgproc: from the carry (JPEG files only)"
  fi
fi

# Only the architecture of the GPU here: half the CUDA compile time of the
# default "80;90" (device time is counted while the build runs).
CAP=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
step configure
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DDEEPCANVAS_GUI=OFF -DDEEPCANVAS_OPENCV=$OPENCV -DCMAKE_PREFIX_PATH="$SYS" -DDEEPCANVAS_CUDA=ON \
  ${CAP:+-DDEEPCANVAS_CUDA_ARCHITECTURES=$CAP} -DCUDNN_ROOT="$CUDNN_ROOT" -DDC_JSON_INCLUDE_DIR="$CARRY/json" \
  -DDC_GTEST_SOURCE_DIR="$CARRY/googletest" \
  -DDC_OPENBLAS_DIR="$SYS/lib" -DDC_OPENBLAS_INCLUDE="$SYS/include" \
  -DZLIB_ROOT="$SYS" >"$LOGS/configure.log" 2>&1
RESULT[configure]=$?
tail -5 "$LOGS/configure.log"
step build
TARGETS="deepcanvas-cli deepcanvas-cuda cuda_tests"
[ "$OPENCV" = JPEG ] && TARGETS="$TARGETS make_jpeg_folder"
[ "$ENGINE_TESTS" = 1 ] && TARGETS="$TARGETS engine_tests"
ninja -C "$BUILD" $TARGETS >"$LOGS/build.log" 2>&1
RESULT[build]=$?
grep -E "error|FAILED" "$LOGS/build.log" | head -20
tail -2 "$LOGS/build.log"

step devices
"$BUILD/bin/deepcanvas-cli" devices 2>&1 | tee "$LOGS/devices.log"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
# The GPU micro-benchmark (issue 14): its figures go into the log for
# docs/BENCHMARKS.md and the advisor's catalog comparison.
XDG_CACHE_HOME="$LOGS/cache" "$BUILD/bin/deepcanvas-cli" bench-device --device cuda:0 --refresh 2>&1 |
  tee "$LOGS/bench-device.log"

if [[ ",$SKIP," != *",tests,"* ]]; then
  step cuda_tests
  (cd "$BUILD" && DC_REQUIRE_CUDA=1 timeout "${DC_TESTS_TIMEOUT:-300}" "$BUILD/bin/cuda_tests" --gtest_filter="$FILTER" 2>&1) | tee "$LOGS/cuda_tests.log" | grep -vE "^\[ (RUN|       OK) " | tail -40
  RESULT[cuda_tests]=${PIPESTATUS[0]}
fi

if [ "$ENGINE_TESTS" = 1 ]; then
  step engine_tests
  "$BUILD/bin/engine_tests" --gtest_brief=1 >"$LOGS/engine_tests.log" 2>&1
  RESULT[engine_tests]=$?
  tail -3 "$LOGS/engine_tests.log"
fi

DATA=$CARRY/fashion-mnist
ls "$DATA"/train-images* >/dev/null 2>&1 || DATA=$ROOT/sample_data/fashion-mnist-subset
wanted() { [ "$BENCH" = 1 ] && [[ ",$SKIP," != *",$1,"* ]]; }
CLI=$BUILD/bin/deepcanvas-cli
# The synthetic RGB sets (lite0, mnv2) of gpu_peers.py and gpu_conv_paths.sh:
# in the build folder, out of the logs that come back.
export DC_SYNTHETIC_DIR=${DC_SYNTHETIC_DIR:-$BUILD/synthetic}
for cfg in ${PROFILE//,/ }; do
  step "kernel profile: $cfg"
  timeout 150 python3 "$ROOT/bench/kernel_profile.py" --cli "$CLI" --data "$DATA" --config "$cfg" \
    --json "$LOGS/profile-${cfg//:/-}.json" 2>&1 | tee -a "$LOGS/profile.log"
  RESULT[profile]=${PIPESTATUS[0]}
done
if [ "$AB" -gt 0 ] && [ "$BENCH" = 1 ]; then
  step "convolution and recurrent paths A/B ($AB rounds)"
  "$ROOT/bench/gpu_conv_paths.sh" "$CLI" "$DATA" "$AB" "$LOGS/paths-ab.jsonl" "$AB_SET" 2>&1 | tee "$LOGS/paths-ab.log"
  RESULT[ab]=${PIPESTATUS[0]}
fi
if wanted advisor; then
  step "advisor: predicted vs measured on this GPU"
  # The bench-device figures measured above (their cache): advise's
  # "(measured here)" row and the runs' own predictions come from them.
  XDG_CACHE_HOME="$LOGS/cache" PYTHONUNBUFFERED=1 timeout "${DC_ADVISOR_TIMEOUT:-900}" \
    python3 "$ROOT/bench/advisor_accuracy.py" --cli "$CLI" --device cuda \
    --gpu "${DC_GPU_ROW:-measured}" --data "$DATA" --samples 32768 \
    --raw "$LOGS/advisor_gpu.jsonl" ${DC_ADVISOR_ARGS:-} 2>&1 | tee "$LOGS/advisor_gpu.log"
  RESULT[advisor]=${PIPESTATUS[0]}
fi
# Seconds left before the deadline, less a reserve (0 without a deadline).
left() { [ "$DEADLINE" -gt 0 ] && echo $(( DEADLINE - SECONDS - $1 > 1 ? DEADLINE - SECONDS - $1 : 1 )) || echo 0; }
# The photo-folder step after peers and tta keeps about 4 minutes for itself.
FOLDER_RESERVE=0
wanted folder && [ "$OPENCV" = JPEG ] && FOLDER_RESERVE=240
# Inductor's compiled kernels are cached on disk, shared by the processes.
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$BUILD/inductor-cache}
if wanted peers; then
  step "DeepCanvas vs PyTorch's peers ($DATA)"
  # The time to accuracy after it needs about 2 minutes; a process started
  # just inside the budget may run 40 s past it.
  PYTHONUNBUFFERED=1 python3 "$ROOT/bench/gpu_peers.py" --cli "$CLI" --data "$DATA" \
    --peers "$PEERS" --configs "$CONFIGS" --repeats "$REPEATS" --synthetic-dir "$DC_SYNTHETIC_DIR" \
    --budget-s "${PEERS_BUDGET:-$(left $(( $(wanted tta && echo 170 || echo 25) + FOLDER_RESERVE )))}" --out "$LOGS" 2>&1 | tee "$LOGS/peers.log"
  RESULT[peers]=${PIPESTATUS[0]}
fi
if wanted tta; then
  step "time to 91 % ($DATA)"
  PYTHONUNBUFFERED=1 python3 "$ROOT/bench/gpu_peers.py" --cli "$CLI" --data "$DATA" \
    --tta-sides "$TTA_SIDES" --budget-s "$(left $((40 + FOLDER_RESERVE)))" --out "$LOGS" 2>&1 |
    tee "$LOGS/tta.log"
  RESULT[tta]=${PIPESTATUS[0]}
fi
if wanted folder; then
  # Issue 31: the transfer template at 224 px on a folder of JPEGs, streamed
  # with the picture cache, against torchvision's DataLoader feeding the
  # same GPU (bench/gpu_image_folder.py).
  # Only with this run's photo carry: a make_jpeg_folder left in the build
  # folder by an earlier call says nothing of this CLI, built without OpenCV.
  if [ "$OPENCV" = JPEG ] && [ -x "$BUILD/bin/make_jpeg_folder" ]; then
    step "photo folder on the GPU"
    JPEGS=${DC_JPEG_DIR:-$BUILD/jpegs-20k}
    if [ -f "$JPEGS/.done" ] || { "$BUILD/bin/make_jpeg_folder" "$JPEGS" --count 20000 --seed 1 &&
      touch "$JPEGS/.done"; }; then
      # Each run is about 30 s; the script starts none once its budget is
      # spent, and the timeout (a minute more) is only a backstop.
      BUDGET=$( [ "$DEADLINE" -gt 0 ] && left 90 || echo 900)
      PYTHONUNBUFFERED=1 timeout $((BUDGET + 60)) \
        python3 "$ROOT/bench/gpu_image_folder.py" --cli "$CLI" --folder "$JPEGS" --budget-s "$BUDGET" \
        --repeats "${DC_FOLDER_REPEATS:-3}" --out "$LOGS" 2>&1 | tee "$LOGS/folder.log"
      RESULT[folder]=${PIPESTATUS[0]}
    else
      echo "photo folder: make_jpeg_folder failed"
      RESULT[folder]=1
    fi
  else
    echo "photo folder: not measured (no OpenCV core/imgproc and libjpeg here: rerun installer/gpu/prepare-carry.sh --photos)"
  fi
fi
if [ "$LEGACY" = 1 ]; then
  step "benchmark ($DATA)"
  PYTHONUNBUFFERED=1 python3 "$ROOT/bench/gpu_cnn_vs_pytorch.py" --cli "$CLI" \
    --data "$DATA" --epochs "$EPOCHS" --json-out "$LOGS/bench.json" 2>&1 | tee "$LOGS/bench.log"
  RESULT[bench]=${PIPESTATUS[0]}
  step "LSTM benchmark ($DATA)"
  PYTHONUNBUFFERED=1 python3 "$ROOT/bench/gpu_lstm_vs_pytorch.py" --cli "$CLI" \
    --data "$DATA" --epochs "$LSTM_EPOCHS" --json-out "$LOGS/lstm_bench.json" 2>&1 | tee "$LOGS/lstm_bench.log"
  RESULT[lstm_bench]=${PIPESTATUS[0]}
fi

echo
echo "=== summary"
printf '%-14s %s\n' step result
for k in configure build cuda_tests engine_tests profile ab advisor peers tta folder bench lstm_bench; do
  [ -n "${RESULT[$k]+x}" ] && printf '%-14s %s\n' "$k" "$([ "${RESULT[$k]}" = 0 ] && echo ok || echo "FAILED (${RESULT[$k]})")"
done
if [ -f "$LOGS/cuda_tests.log" ]; then
  grep -E "^\[  (PASSED|FAILED)  \]|tests? ran" "$LOGS/cuda_tests.log" | head -5
  grep -E "^\[ (sample subset|  FAILED  ) \]" "$LOGS/cuda_tests.log" | head -20
fi
[ -f "$LOGS/paths-ab.log" ] && cat "$LOGS/paths-ab.log"
[ -f "$LOGS/bench.log" ] && tail -9 "$LOGS/bench.log"
[ -f "$LOGS/lstm_bench.log" ] && tail -4 "$LOGS/lstm_bench.log"
[ -f "$LOGS/peers.log" ] && sed -n '/^GPU /,$p' "$LOGS/peers.log"
[ -f "$LOGS/tta.log" ] && sed -n '/^Time to /,$p' "$LOGS/tta.log"
[ -f "$LOGS/folder.log" ] && tail -1 "$LOGS/folder.log"
for k in "${!RESULT[@]}"; do [ "${RESULT[$k]}" = 0 ] || exit 1; done
exit 0
