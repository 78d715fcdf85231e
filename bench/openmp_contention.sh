#!/usr/bin/env bash
# Two trainings at once on the same cores: libgomp's default long spin
# against the short one DeepCanvas restarts with when other threads run
# (engine/core/parallel.cpp, docs/BENCHMARKS.md "OpenMP idle threads").
# Wall seconds of: one run alone; two started together and two started 1 s
# apart, with GOMP_SPINCOUNT=300000 (libgomp's default, forced) and without
# it (DeepCanvas's choice); and the two-conv CNN alone at both spin counts
# (samples/s), which is what the short spin costs a run that has the cores.
# Nothing else may run meanwhile.
#   bench/openmp_contention.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=build/bin/deepcanvas-cli
ROUNDS=${1:-3}
RUN="$CLI train resources/templates/char_transformer.dcproj --epochs 1 --steps-per-epoch 60 --threads 2 --quiet"
secs() { /usr/bin/time -f %e bash -c "$1" 2>&1 >/dev/null | tail -1; }
pair() { echo "$1$RUN >/dev/null 2>&1 & sleep $2; $1$RUN >/dev/null 2>&1; wait"; }
cnn() {
  env $1 $CLI train sample_data/sample_project.dcproj --data /usr/share/datasets/fashion-mnist \
    --epochs 1 --steps-per-epoch 400 --threads 2 --json --quiet 2>/dev/null | tail -1 |
    python3 -c "import json,sys; print(round(json.load(sys.stdin)['train_samples_per_s']))"
}
echo "round alone pair_default pair_short pair_default_1s pair_short_1s cnn_default cnn_short"
for r in $(seq "$ROUNDS"); do
  echo "$r $(secs "$RUN") $(secs "$(pair "GOMP_SPINCOUNT=300000 " 0)") $(secs "$(pair "" 0)")" \
    "$(secs "$(pair "GOMP_SPINCOUNT=300000 " 1)") $(secs "$(pair "" 1)")" \
    "$(cnn GOMP_SPINCOUNT=300000) $(cnn GOMP_SPINCOUNT=3000)"
done
