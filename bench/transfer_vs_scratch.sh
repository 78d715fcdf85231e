#!/usr/bin/env bash
# Transfer learning against training from scratch on little data (the table
# in docs/BENCHMARKS.md): test accuracy of
#   scratch:  the sample project's two-conv CNN, trained from random weights;
#   transfer: EfficientNet-Lite0 (ImageNet) frozen + a new GlobalAvgPool/Dense
#             head (deepcanvas-cli transfer), inputs resized to SIZE px RGB;
# on (1) Fashion-MNIST, 100 training images per class, the full 10k test set,
# and (2) the generated "shapes" image folder (6 classes, 30 training images
# each, 200 test images each). Accuracies, not timings: they do not depend
# on the machine's load.
#
# Needs the fetched base (installer/fetch-pretrained.sh) and Debian's
# dataset-fashion-mnist, python3-numpy and python3-pil.
# Usage: bench/transfer_vs_scratch.sh [BUILD_DIR] [WORK_DIR]
# Environment: SIZE (64), TRANSFER_EPOCHS (3) and SCRATCH_EPOCHS (15) for
# Fashion-MNIST, SHAPES_TRANSFER_EPOCHS (15), SHAPES_SCRATCH_EPOCHS (30), SEED (42).
# The defaults keep a run within about an hour on 2 CPU cores: every epoch
# evaluates the full test set, which for the base at 64 px is 10k x 31M MACs.
# SIZE=224 (the base's own input) took about 10 minutes in all on the same
# machine once depthwise convolutions ran their own kernel.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
work="${2:-$root/build/transfer-bench}"
cli="$build/bin/deepcanvas-cli"
size="${SIZE:-64}"
t_epochs="${TRANSFER_EPOCHS:-3}"
s_epochs="${SCRATCH_EPOCHS:-15}"
seed="${SEED:-42}"
# The shapes' test set is small (1200), so more epochs cost little there.
shapes_t_epochs="${SHAPES_TRANSFER_EPOCHS:-15}"
shapes_s_epochs="${SHAPES_SCRATCH_EPOCHS:-30}"
mkdir -p "$work"
[ -f "$work/fashion-mnist-100/train-images-idx3-ubyte.gz" ] ||
  /usr/bin/python3 "$root/bench/make_transfer_data.py" "$work"

# The sample project's architecture with the Input set to the data's shape.
scratch_project() {  # OUT CHANNELS SIZE CLASSES
  /usr/bin/python3 - "$root/sample_data/sample_project.dcproj" "$@" <<'PY'
import json, sys
src, out, c, s, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
p = json.load(open(src))
for n in p["graph"]["nodes"]:
    if n["type"] == "Input":
        n["attrs"]["shape"] = [c, s, s]
    if n["name"] == "dense2":
        n["attrs"]["units"] = k
p["name"] = "two-conv CNN from scratch"
json.dump(p, open(out, "w"), indent=2)
PY
}

accuracy() {  # the JSON line's test accuracy, in percent
  /usr/bin/python3 -c 'import json,sys; print("%.2f" % (100 * json.loads(sys.stdin.read().strip().splitlines()[-1])["test_accuracy"]))'
}

run() {  # NAME PROJECT DATA EPOCHS [extra flags]
  local name="$1" proj="$2" data="$3" epochs="$4"
  shift 4
  local acc
  acc=$("$cli" train "$proj" --data "$data" --epochs "$epochs" --seed "$seed" --json --quiet "$@" |
        accuracy)
  printf '| %-40s | %6s %% |\n' "$name" "$acc"
}

echo "| run | test accuracy |"
echo "|---|---|"
scratch_project "$work/scratch_shapes.dcproj" 3 64 6
run "shapes 30/class: two-conv CNN, scratch" "$work/scratch_shapes.dcproj" \
  "$work/shapes-idx" "$shapes_s_epochs"
"$cli" transfer -o "$work/transfer_shapes.dcproj" --size "$size" --classes 6 \
  --data "$work/shapes-idx" 2>/dev/null
run "shapes 30/class: Lite0 frozen + head" "$work/transfer_shapes.dcproj" \
  "$work/shapes-idx" "$shapes_t_epochs"

scratch_project "$work/scratch_fashion.dcproj" 1 28 10
run "Fashion-MNIST 100/class: two-conv CNN, scratch" "$work/scratch_fashion.dcproj" \
  "$work/fashion-mnist-100" "$s_epochs"
"$cli" transfer -o "$work/transfer_fashion.dcproj" --size "$size" --classes 10 \
  --data "$work/fashion-mnist-100" 2>/dev/null
run "Fashion-MNIST 100/class: Lite0 frozen + head" "$work/transfer_fashion.dcproj" \
  "$work/fashion-mnist-100" "$t_epochs"

