#!/usr/bin/env bash
# Installs what is needed, builds, and opens the bundled sample project (the
# classic two-conv CNN on a 10k-image Fashion-MNIST subset) in the app.
# Without a display it trains the same project with the CLI instead and shows
# what the trained model predicts for a few test images.
set -euo pipefail
cd "$(dirname "$0")"
./installer/install-deps.sh
./build.sh
PROJECT=sample_data/sample_project.dcproj
if [[ -x build/bin/deepcanvas && ( -n "${DISPLAY:-}" || -n "${WAYLAND_DISPLAY:-}" ) ]]; then
  exec build/bin/deepcanvas "$PROJECT"
fi
mkdir -p out
CLI=build/bin/deepcanvas-cli
$CLI summary "$PROJECT"
$CLI train "$PROJECT" --checkpoint out/sample_model.safetensors
for i in 0 1 2; do
  $CLI predict "$PROJECT" --checkpoint out/sample_model.safetensors --index $i --top 3
done
