#!/usr/bin/env bash
# Issue 15's "done when": a 16-trial TPE sweep of the sample project with
# ASHA pruning against the same sweep without pruning, 3 epochs per trial,
# and the template trained with its own settings on the same split.
# Usage: [THREADS=N] [MIN_EPOCHS=R] bench/tuning_sweep.sh [STEPS_PER_EPOCH] (default: whole epochs)
# MIN_EPOCHS: ASHA's first rung (default: the sweep's, epochs / eta^2 = 1/3).
# NO_BASELINE=1: both sweeps without the baseline trial 0.
# Prints epochs used and accuracies; results in docs/BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=${CLI:-build/bin/deepcanvas-cli}
OUT=${OUT:-out/tuning-bench}
STEPS=${1:-0}
mkdir -p "$OUT"
for name in asha none template; do
  sed "s#\"path\": \"fashion-mnist-subset\"#\"path\": \"$PWD/sample_data/fashion-mnist-subset\"#" \
    sample_data/sample_project.dcproj > "$OUT/$name.dcproj"
done
LIMIT=(--threads "${THREADS:-0}")
[[ $STEPS != 0 ]] && LIMIT+=(--steps-per-epoch "$STEPS")
RUNG=()
[[ -n ${MIN_EPOCHS:-} ]] && RUNG=(--min-epochs "$MIN_EPOCHS")
# NO_BASELINE=1: no trial 0 with the project's own values (the default has one).
[[ -n ${NO_BASELINE:-} ]] && RUNG+=(--no-baseline)
SPACE=(--param lr=log:3e-4:1e-2 --param batch=choice:32,64,128 --param conv1.filters=int:16:64)
"$CLI" train "$OUT/template.dcproj" "${LIMIT[@]}" --val-split 0.1 --json --quiet > "$OUT/template.json"
for pruner in asha none; do
  "$CLI" sweep "$OUT/$pruner.dcproj" --fresh --trials 16 --epochs 3 "${LIMIT[@]}" --sampler tpe \
    --pruner $pruner ${RUNG[@]+"${RUNG[@]}"} --seed 0 "${SPACE[@]}" --json > "$OUT/$pruner.json"
done
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
t = json.load(open(f"{out}/template.json"))
print(f"template: val {t.get('val_accuracy', float('nan')):.4f} test {t['test_accuracy']:.4f}, 3 epochs")
for name in ("asha", "none"):
    s = json.load(open(f"{out}/{name}.json"))
    st = [x["status"] for x in s["trials"]]
    b = s["best"]
    base = next((x for x in s["trials"] if x.get("baseline")), None)
    if base:
        m = base["metrics"][-1]
        print(f"{name}: baseline trial {base['id']} ({base['status']}) val {m['val_accuracy']:.4f}"
              + (f" test {m['test_accuracy']:.4f}" if m.get("test_accuracy") is not None else ""))
    print(f"{name}: {s['epochs_used']:.2f} of 48 epochs ({s['epochs_used'] / 48:.1%}); {st.count('completed')} completed, "
          f"{st.count('pruned')} pruned, {st.count('failed')} failed; best trial {b['id']} "
          f"val {b['val_accuracy']:.4f} test {b['test_accuracy']:.4f} {b['params']}")
PY
