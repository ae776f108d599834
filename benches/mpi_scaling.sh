#!/usr/bin/env bash
# What this machine can show of MPI sharding: one expsin fit (p = 16, LM, exact Jacobian) of
# ROWS points, alone and under `mpirun -np 1/2`, with the solver's own time (elapsed_s, data
# loading excluded) and the wall time, and the bytes each evaluation gathers. Prints a
# markdown table. Needs the `mpi` feature's prerequisites (see .ci/install).
#
#   bash benches/mpi_scaling.sh [ROWS]      # default 1000000
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-1000000}

cargo build --release --locked --features mpi --quiet
bin=target/release/cudamin
dir=target/mpi-scaling
mkdir -p "$dir"
csv=$dir/expsin-$rows.csv
if [ ! -f "$csv" ]; then
  python3 - "$rows" "$csv" <<'EOF'
import math, sys
rows, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as f:
    f.write("x,y\n")
    for k in range(rows):
        x = 10.0 * k / rows
        y = 2.0 * math.exp(-0.5 * x) + 0.3 * math.sin(2 * x) - 0.2 * math.sin(3 * x)
        f.write(f"{x!r},{y + 0.01 * math.sin(12.9898 * k)!r}\n")
EOF
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
fit=(fit "$csv" --model expsin --backend cpu --json)

# run LABEL THREADS [mpirun args...]: one row of the table.
run() {
  local label=$1 threads=$2
  shift 2
  local start end out
  start=$(date +%s.%N)
  out=$(RAYON_NUM_THREADS=$threads "$@" "$bin" "${fit[@]}")
  end=$(date +%s.%N)
  python3 - "$label" "$start" "$end" "$out" <<'EOF'
import json, sys
label, start, end, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), json.loads(sys.argv[4])
print(f"| {label} | {out['elapsed_s']:.3f} | {end - start:.2f} | {out['nfev']} / {out['njev']} | {out['rss']!r} |")
EOF
}

echo "rows = $rows, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "| run | solve s | wall s | nfev / njev | rss |"
echo "|---|---|---|---|---|"
for rep in 1 2; do
  run "alone, 1 thread (rep $rep)" 1
  run "alone, 2 threads (rep $rep)" 2
  run "mpirun -np 1, 1 thread (rep $rep)" 1 mpirun -np 1
  run "mpirun -np 2, 1 thread each (rep $rep)" 1 mpirun --oversubscribe -np 2
done
