#!/bin/bash
# The CUDA plugin's 16-bit convolution paths against each other on the lent
# GPU, each in its own process, alternating, ROUNDS rounds: NCHW (the
# default), channels last (DC_CUDA_NHWC=1), and channels last with the GEMM
# weight gradient (DC_CUDA_WGRAD=gemm). Prints the second epoch's samples/s
# and the allocator's peak for VGG-BN and ResNet in bf16 at batch 128.
#   bench/gpu_conv_paths.sh [CLI] [DATA] [ROUNDS]
CLI=${1:-build-gpu/bin/deepcanvas-cli}
DATA=${2:-carry/fashion-mnist}
ROUNDS=${3:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
sps() {
  python3 -c 'import json,sys; j=json.loads(sys.stdin.read().strip().splitlines()[-1]); print("%.0f samples/s, peak %.0f MiB" % (j["history"][-1]["train_samples_per_s"], j["peak_device_bytes"] / 2**20))'
}
for r in $(seq "$ROUNDS"); do
  for path in "nchw" "nhwc DC_CUDA_NHWC=1" "nhwc+gemm DC_CUDA_NHWC=1 DC_CUDA_WGRAD=gemm"; do
    set -- $path
    name=$1
    shift
    for m in vgg_small resnet_small; do
      printf 'round %s %-10s %-13s ' "$r" "$name" "$m"
      env "$@" "$CLI" train "$ROOT/resources/templates/$m.dcproj" --data "$DATA" --device cuda \
        --batch 128 --epochs 2 --precision bf16 --optimizer adam --lr 0.001 --schedule constant \
        --json --quiet | sps
    done
  done
done
