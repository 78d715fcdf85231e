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
# SET=new compares this session's paths with what they replace:
# depthwise convolutions in the plugin's own kernels (the default) against
# cuDNN (DC_CUDA_DEPTHWISE=cudnn) on the EfficientNet-Lite0 transfer
# project (frozen base, 224 px, batch 64) and MobileNetV2 (96 px, batch
# 128), both on bench/make_synthetic_idx.py's seeded noise.
# SET=pw compares the pointwise (1×1) convolutions of the same two projects
# in bf16 on cuDNN's 16-bit channels-last copies (DC_CUDA_PW=cudnn), as
# cuBLAS GEMMs on the float32 planes with 16-bit operands (the default
# since 2026-11-28), with TF32 (DC_CUDA_PW=tf32), and with the ReLU6s not
# folded into the convolutions (DC_CUDA_FUSE=0); and the ViT-tiny template
# (bf16, batch 128, Fashion-MNIST) with its Dense layers on the float32
# tensors (the default since 2026-11-28) and on 16-bit copies
# (DC_CUDA_DENSE=copies).
#   bench/gpu_conv_paths.sh [CLI] [DATA] [ROUNDS] [OUT] [SET: paths|fuse|new|pw]
CLI=${1:-build-gpu/bin/deepcanvas-cli}
DATA=${2:-carry/fashion-mnist}
ROUNDS=${3:-1}
OUT=${4:-/dev/null}
SET=${5:-paths}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ALGOS=/dev/null
[ "$OUT" != /dev/null ] && ALGOS=$OUT.algos
run() {  # NAME PROJECT PRECISION BATCH [VAR=VALUE...]  (RUN_DATA: another dataset)
  local name=$1 project=$2 prec=$3 batch=$4
  local data=${RUN_DATA:-$DATA}
  shift 4
  printf '%-14s %-16s %-5s ' "$name" "$(basename "$project" .dcproj)" "$prec"
  local line
  line=$(env "$@" "$CLI" train "$project" --data "$data" --device cuda --batch "$batch" \
    --epochs 2 --precision "$prec" --optimizer adam --lr 0.001 --schedule constant \
    --json --quiet 2>>"$ALGOS" | tail -1)
  if [ -z "$line" ]; then
    echo "failed (see $ALGOS)"
    return
  fi
  echo "{\"variant\": \"$name\", \"project\": \"$project\", \"precision\": \"$prec\", \"run\": $line}" >>"$OUT"
  python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print("%8.0f samples/s, peak %5.0f MiB" % (j["history"][-1]["train_samples_per_s"], j["peak_device_bytes"] / 2**20))' "$line"
}
if [ "$SET" = new ] || [ "$SET" = pw ]; then
  # The same folders bench/gpu_peers.py makes (SYNTHETIC there), so a run of
  # both makes them once.
  SYN=${DC_SYNTHETIC_DIR:-/tmp/dc-gpu-peers}
  python3 "$ROOT/bench/make_synthetic_idx.py" "$SYN/synthetic-rgb224-6400" --side 224 --train 6400 --test 640 >/dev/null
  python3 "$ROOT/bench/make_synthetic_idx.py" "$SYN/synthetic-rgb96-12800" --side 96 --train 12800 --test 1280 >/dev/null
fi
for r in $(seq "$ROUNDS"); do
  echo "round $r"
  if [ "$SET" = new ]; then
    for v in cudnn kernel; do
      env=(); [ $v = cudnn ] && env=(DC_CUDA_DEPTHWISE=cudnn)
      RUN_DATA=$SYN/synthetic-rgb224-6400 run "dw-$v" "$ROOT/bench/lite0_transfer.dcproj" bf16 64 "${env[@]}"
      RUN_DATA=$SYN/synthetic-rgb96-12800 run "dw-$v" "$ROOT/bench/mobilenet_v2.dcproj" bf16 128 "${env[@]}"
      RUN_DATA=$SYN/synthetic-rgb96-12800 run "dw-$v" "$ROOT/bench/mobilenet_v2.dcproj" fp32 128 "${env[@]}"
    done
    continue
  fi
  if [ "$SET" = pw ]; then
    for v in cudnn gemm tf32 unfused; do
      env=()
      case $v in cudnn | tf32) env=(DC_CUDA_PW=$v) ;; unfused) env=(DC_CUDA_FUSE=0) ;; esac
      RUN_DATA=$SYN/synthetic-rgb224-6400 run "pw-$v" "$ROOT/bench/lite0_transfer.dcproj" bf16 64 "${env[@]}"
      RUN_DATA=$SYN/synthetic-rgb96-12800 run "pw-$v" "$ROOT/bench/mobilenet_v2.dcproj" bf16 128 "${env[@]}"
    done
    run dense-copies "$ROOT/resources/templates/vit_tiny.dcproj" bf16 128 DC_CUDA_DENSE=copies
    run dense-fast "$ROOT/resources/templates/vit_tiny.dcproj" bf16 128
    continue
  fi
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
