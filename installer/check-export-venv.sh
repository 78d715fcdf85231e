#!/usr/bin/env bash
# Issue 13's "runs on a fresh machine with only its requirements installed",
# checked for real: exports a project with deepcanvas-cli, creates a fresh
# virtual environment WITHOUT Debian's site-packages, installs only the
# export's requirements.txt from PyPI into it, and trains with it: one
# process, then torchrun with 2 gloo processes (replicas compared), then
# `deepcanvas-cli eval` on the checkpoint. Run by hand: it downloads
# PyTorch (about 3 GB with its CUDA libraries; `--cpu` takes the smaller
# CPU-only wheel from download.pytorch.org, when that host is reachable;
# pip falls back to PyPI's CUDA build otherwise). CI cannot reach PyPI; its
# offline stand-in is PyTorchExport.TrainPyRunsIsolatedFromACopyWithNothingOfOurs.
#
#   installer/check-export-venv.sh [--cpu] [--keep] [PROJECT] [BUILD_DIR]
#
# PROJECT defaults to sample_data/sample_project.dcproj, BUILD_DIR to build.
# Exits non-zero at the first step that fails, saying which.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cpu=0 keep=0
args=()
for a in "$@"; do
  case "$a" in
    --cpu) cpu=1 ;;
    --keep) keep=1 ;;
    -h|--help) sed -n 2,16p "$0"; exit 0 ;;
    *) args+=("$a") ;;
  esac
done
project="${args[0]:-$root/sample_data/sample_project.dcproj}"
build="${args[1]:-$root/build}"
cli="$build/bin/deepcanvas-cli"
[ -x "$cli" ] || { echo "check-export-venv: no $cli; build first (./build.sh)" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/dc-export-venv.XXXXXX")"
if [ "$keep" = 0 ]; then trap 'rm -rf "$work"' EXIT; fi
step() { echo "== check-export-venv: $*"; }

step "export $project"
"$cli" export "$project" --format pytorch -o "$work/export" --quiet

step "fresh venv (no system site-packages) in $work/venv"
/usr/bin/python3 -m venv "$work/venv"
py="$work/venv/bin/python"
if "$py" -c "import torch" 2>/dev/null; then
  echo "check-export-venv: the fresh venv already imports torch: not fresh" >&2
  exit 1
fi
"$py" -m pip install --quiet --disable-pip-version-check --upgrade pip
pip_args=(-r "$work/export/requirements.txt")
if [ "$cpu" = 1 ]; then
  pip_args+=(--extra-index-url https://download.pytorch.org/whl/cpu)
fi
step "pip install ${pip_args[*]}"
"$py" -m pip install --disable-pip-version-check "${pip_args[@]}"
"$py" -c "import torch, numpy, safetensors; print('venv: torch', torch.__version__, 'numpy', numpy.__version__, 'safetensors', safetensors.__version__)"

cd "$work/export"
step "one process, 20 steps (python -I: nothing but the venv and the export)"
OMP_NUM_THREADS=1 "$py" -I train.py --device cpu --epochs 1 --max-steps 20 --out "$work/out1"
step "torchrun, 2 gloo processes, 30 steps"
OMP_NUM_THREADS=1 "$py" -m torch.distributed.run --standalone --nproc_per_node=2 \
  --redirects 2 --tee 1 train.py --device cpu --epochs 1 --max-steps 30 --threads 1 --out "$work/out2"
tail -n 1 "$work/out2/metrics.jsonl" | grep -q '"replicas_identical": true' ||
  { echo "check-export-venv: the 2 replicas differ: $(tail -n 1 "$work/out2/metrics.jsonl")" >&2; exit 1; }
step "checkpoint with safetensors' own API, then deepcanvas-cli eval"
"$py" -c "import safetensors.torch as s, sys; t = s.load_file(sys.argv[1]); print(len(t), 'tensors')" \
  "$work/out2/last.safetensors"
"$cli" eval "$project" --checkpoint "$work/out2/last.safetensors"
step "OK: the export trained in a fresh venv with only its requirements"
