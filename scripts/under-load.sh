#!/usr/bin/env bash
# Run a command while every core is busy with a CPU-bound loop (one per core, or N from
# RAC_LOAD_PROCS), the way a shared CI machine is; the loops stop when the command ends.
#
#   bash scripts/under-load.sh .tools/bin/uv run --frozen pytest -q
#
# The suite must pass like this: no test may depend on how fast the machine is.
set -euo pipefail
procs="${RAC_LOAD_PROCS:-$(nproc)}"
pids=()
stop() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap stop EXIT
for _ in $(seq 1 "$procs"); do
  python3 -c 'while True: pass' &
  pids+=("$!")
done
echo "+ under a CPU-bound load of $procs processes: $*"
"$@"
