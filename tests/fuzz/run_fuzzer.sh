#!/usr/bin/env bash
# Runs one fuzz target for SECONDS over its seed corpus (read only) plus a
# work corpus (where new inputs go); a crash, sanitizer report, leak, time-out
# or memory blow-up is written to WORK/crash-* and fails the run.
# usage: run_fuzzer.sh FUZZER SEED_CORPUS WORK_DIR SECONDS [libFuzzer options]
set -euo pipefail
fuzzer=$1 seeds=$2 work=$3 seconds=$4
shift 4
mkdir -p "$work/corpus"
exec "$fuzzer" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
  -max_len=1048576 -print_final_stats=1 -artifact_prefix="$work/" "$@" "$work/corpus" "$seeds"
