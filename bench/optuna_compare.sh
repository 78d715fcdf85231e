#!/usr/bin/env bash
# Optuna as the reference for deepcanvas-cli sweep (issue 15): makes a
# virtual environment in .venv-bench (system site packages visible), installs
# optuna from PyPI into it on first use, and runs bench/optuna_compare.py with
# the arguments given, e.g.
#   bench/optuna_compare.sh --trials 16 --epochs 3 --steps-per-epoch 50
# This is the only step that downloads anything, and only when run on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv-bench}
if [[ ! -x $VENV/bin/python ]]; then
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
if ! "$VENV/bin/python" -c 'import optuna' 2>/dev/null; then
  "$VENV/bin/python" -m pip install --quiet 'optuna>=3.4'
fi
exec "$VENV/bin/python" bench/optuna_compare.py "$@"
