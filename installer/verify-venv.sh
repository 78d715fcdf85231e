#!/usr/bin/env bash
# The tests' verification tools that only PyPI has (onnxruntime, to run the
# ONNX models DeepCanvas exports; tensorboard, whose reader checks the event
# files every run writes), in a virtual environment on top of
# Debian's Python, so Debian's torch and numpy stay the ones in use.
# Run on purpose (it downloads); the tests that need it skip, saying so,
# when it is absent. Idempotent. Location: $DC_VERIFY_VENV or .venv-verify.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${DC_VERIFY_VENV:-$root/.venv-verify}"

if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
if "$venv/bin/python" -c "import onnxruntime, tensorboard" 2>/dev/null; then
  echo "verify-venv: onnxruntime and tensorboard already in $venv"
  exit 0
fi
# numpy < 2: Debian's torch 1.13 is built against numpy 1.x.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "onnxruntime>=1.16" "tensorboard" "numpy<2"
"$venv/bin/python" -c "import onnxruntime, tensorboard, numpy, torch; print('verify-venv: onnxruntime', onnxruntime.__version__, 'tensorboard', tensorboard.__version__, 'numpy', numpy.__version__, 'torch', torch.__version__)"
