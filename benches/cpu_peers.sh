#!/usr/bin/env bash
# cudamin against every CPU peer, side by side in one run (issue 13), and the results into
# BENCHMARKS.md: `bash benches/cpu_peers.sh [--quick] [--only CASE,...]`.
#
# Creates (once) target/cpu-peers-venv with numpy, scipy, jax, optimistix, jaxopt and torch
# (PyPI's torch; on a machine without a GPU it runs on the CPU), builds cudamin, then runs
# benches/gpu_peers.py --suite cpu: the cases, tools and rules are in its docstring. The table
# goes to target/cpu-report/peers.md and replaces the "CPU peers" section of BENCHMARKS.md
# (between its markers). BUDGET (seconds, default 1500) caps the run. A --quick run (small
# sizes, to test the harness) does not touch BENCHMARKS.md.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
venv=target/cpu-peers-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q numpy scipy jax optimistix jaxopt torch
cargo build --release --locked
"$venv/bin/python" benches/gpu_peers.py --suite cpu --device cpu --cudamin target/release/cudamin \
    --out target/cpu-report --budget "${BUDGET:-1500}" "$@"
case " $* " in *" --quick "*) exit 0 ;; esac
python3 - <<'PY'
import re
report = open("target/cpu-report/peers.md").read().replace("# CPU peers", "## CPU peers", 1)
command = "Measured by `bash benches/cpu_peers.sh` (target/cpu-report/peers.json has every run).\n\n"
section = "<!-- cpu-peers:begin -->\n" + command + report + "<!-- cpu-peers:end -->"
text = open("BENCHMARKS.md").read()
pattern = re.compile(r"<!-- cpu-peers:begin -->.*?<!-- cpu-peers:end -->", re.S)
text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip() + "\n\n" + section + "\n"
open("BENCHMARKS.md", "w").write(text)
print("BENCHMARKS.md: CPU peers section written")
PY
