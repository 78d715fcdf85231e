#!/usr/bin/env bash
# Installs what is needed, builds, and trains the bundled sample project (the
# classic two-conv CNN on a 10k-image Fashion-MNIST subset), then shows what
# the trained model predicts for a few test images.
set -euo pipefail
cd "$(dirname "$0")"
./installer/install-deps.sh
./build.sh
mkdir -p out
CLI=build/bin/deepcanvas-cli
$CLI summary sample_data/sample_project.dcproj
$CLI train sample_data/sample_project.dcproj --checkpoint out/sample_model.safetensors
for i in 0 1 2; do
  $CLI predict sample_data/sample_project.dcproj --checkpoint out/sample_model.safetensors --index $i --top 3
done
