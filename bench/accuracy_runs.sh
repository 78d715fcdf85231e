#!/bin/bash
# The accuracy targets of the templates, trained with their own settings on
# full Fashion-MNIST, one JSON line per run and a table last. Slow on a
# 2-core machine; run it where there are more cores or a GPU:
#   bench/accuracy_runs.sh CLI DATA_DIR [DEVICE]     (DEVICE: cpu or cuda)
#   e.g. bench/accuracy_runs.sh build/bin/deepcanvas-cli /usr/share/datasets/fashion-mnist cuda
set -uo pipefail
CLI=${1:?usage: accuracy_runs.sh CLI DATA_DIR [DEVICE]}
DATA=${2:?usage: accuracy_runs.sh CLI DATA_DIR [DEVICE]}
DEVICE=${3:-cpu}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$ROOT/resources/templates
declare -a ROWS
run() {  # name project epochs target
  local out
  out=$("$CLI" train "$2" --data "$DATA" --epochs "$3" --device "$DEVICE" --threads "$(nproc)" \
        --json --quiet 2>&1 | tail -1)
  echo "$1: $out"
  local acc
  acc=$(python3 -c 'import json,sys; print("%.2f" % (100*json.loads(sys.argv[1])["test_accuracy"]))' "$out" 2>/dev/null || echo "failed")
  ROWS+=("$(printf '%-22s %3s epochs  %7s %%  (target >= %s %%)' "$1" "$3" "$acc" "$4")")
}
run "two-conv CNN (sample)" "$ROOT/sample_data/sample_project.dcproj" 3 91.5
run "VGG-style + BatchNorm" "$T/vgg_small.dcproj" 10 92.5
run "LSTM rows" "$T/lstm_rows.dcproj" 5 88
run "GRU rows" "$T/gru_rows.dcproj" 5 -
echo
echo "=== accuracy on $DATA, device $DEVICE"
printf '%s\n' "${ROWS[@]}"
