#!/bin/bash
# The CUDA plugin's convolution and recurrent paths against each other on the
# lent GPU, each run its own process, variants alternating, ROUNDS rounds.
# Convolutions (VGG-BN and ResNet, bf16, batch 128): the legacy cuDNN API
# NCHW (DC_CUDA_CONV=legacy, the default until 2026-11-27), the graph API
# channels last (the default now) and the graph API NCHW (DC_CUDA_NHWC=0).
# LSTM rows (batch 64, fp32 and bf16): cuDNN's standard algorithm
# (DC_CUDA_RNN_ALGO=standard) and the persistent one (the default now where
# cuDNN takes it). Prints the second epoch's samples/s and the allocator's
# peak per run; the raw JSON lines go to OUT (default /dev/null). The graph
# runs log the engines they chose (DC_CUDA_LOG_ALGOS=1) into OUT.algos.
# SET=fuse instead compares VGG-BN and ResNet (bf16 and fp32, batch 128)
# with the ReLUs folded into the BatchNorm/Add before them (the default
# since 2026-11-28) and without (DC_CUDA_FUSE=0).
#   bench/gpu_conv_paths.sh [CLI] [DATA] [ROUNDS] [OUT] [SET: paths|fuse]
CLI=${1:-build-gpu/bin/deepcanvas-cli}
DATA=${2:-carry/fashion-mnist}
ROUNDS=${3:-1}
OUT=${4:-/dev/null}
SET=${5:-paths}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ALGOS=/dev/null
[ "$OUT" != /dev/null ] && ALGOS=$OUT.algos
run() {  # NAME PROJECT PRECISION BATCH [VAR=VALUE...]
  local name=$1 project=$2 prec=$3 batch=$4
  shift 4
  printf '%-14s %-16s %-5s ' "$name" "$(basename "$project" .dcproj)" "$prec"
  local line
  line=$(env "$@" "$CLI" train "$project" --data "$DATA" --device cuda --batch "$batch" \
    --epochs 2 --precision "$prec" --optimizer adam --lr 0.001 --schedule constant \
    --json --quiet 2>>"$ALGOS" | tail -1)
  if [ -z "$line" ]; then
    echo "failed (see $ALGOS)"
    return
  fi
  echo "{\"variant\": \"$name\", \"project\": \"$project\", \"precision\": \"$prec\", \"run\": $line}" >>"$OUT"
  python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print("%8.0f samples/s, peak %5.0f MiB" % (j["history"][-1]["train_samples_per_s"], j["peak_device_bytes"] / 2**20))' "$line"
}
for r in $(seq "$ROUNDS"); do
  echo "round $r"
  if [ "$SET" = fuse ]; then
    for m in vgg_small resnet_small; do
      for prec in bf16 fp32; do
        p=$ROOT/resources/templates/$m.dcproj
        run unfused "$p" "$prec" 128 DC_CUDA_FUSE=0
        run relu-folded "$p" "$prec" 128
      done
    done
    continue
  fi
  for m in vgg_small resnet_small; do
    p=$ROOT/resources/templates/$m.dcproj
    run legacy-nchw "$p" bf16 128 DC_CUDA_CONV=legacy
    run graph-nhwc "$p" bf16 128 DC_CUDA_LOG_ALGOS=1
    run graph-nchw "$p" bf16 128 DC_CUDA_NHWC=0
  done
  for prec in fp32 bf16; do
    run rnn-standard "$ROOT/bench/lstm_rows_adam.dcproj" "$prec" 64 DC_CUDA_RNN_ALGO=standard
    run rnn-default "$ROOT/bench/lstm_rows_adam.dcproj" "$prec" 64
  done
done
