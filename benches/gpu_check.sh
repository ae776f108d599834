#!/usr/bin/env bash
# Everything a user with an NVIDIA GPU runs to see cudamin's CUDA path work, in one command,
# with one report: target/gpu-report/report.md (or --out DIR).
#
#   bash benches/gpu_check.sh                 # build with --features cuda, then check
#   bash benches/gpu_check.sh --bundle DIR    # only build, and copy the binaries into DIR
#   bash benches/gpu_check.sh --prebuilt DIR  # check with the binaries in DIR (no cargo needed)
#   ... [--out DIR] [--peers] [--quick]
#
# --bundle / --prebuilt serve a GPU machine without a Rust toolchain: build here, carry DIR.
# --peers also runs benches/gpu_peers.py (torch, JAX/optimistix, CuPy, Numba side by side);
# with the bundle's Python wheel, it times cudamin from Python on torch tensors too. Then
# benches/gpu_fit_peers.py: large fits against NLSQ, optimistix and torch.
# benches/gpu_fit_loop.py: 1 000 consecutive small fits, one session, against NLSQ and scipy.
# benches/device_data_traffic.py: a 10⁷-point fit from numpy, session and torch CUDA columns.
# benches/fit_batch_peers.py: 10⁷ gauss-2d fits (5 × 5 px) with curve_fit_batch on the GPU
# against a batched torch LM, torchimize, optimistix under jax.vmap, cudamin's CPU path and a
# scipy loop on a subsample (issue 67: ≥ 20 M fits/s in float32, ≥ 5 M in float64).
#
# The steps: the device, `cudamin info`, the JIT time of one problem's kernels (cold, then
# from the driver's cache); tests/gpu.rs with CUDAMIN_REQUIRE_GPU=1 (every built-in problem against the
# CPU, launch sizes, raw kernels, drop order, JIT log, solver vectors on the device);
# tests/device_arrays.rs likewise (kept arrays, another library's memory read in place);
# seed-expsum at n = 10⁸ with L-BFGS and BFGS; bounded L-BFGS-B at 10⁶, GPU and CPU;
# compute-sanitizer (memcheck, racecheck, synccheck) on evaluations, an L-BFGS and an L-BFGS-B
# solve and the raw kernels; and
# timings of the value and gradient passes, GPU and CPU, with the value pass's bandwidth against
# the device's own copy bandwidth.
set -uo pipefail
cd "$(dirname "$0")/.."

mode=build bin= out=target/gpu-report peers=0 quick=0
while [ $# -gt 0 ]; do
  case $1 in
    --bundle) mode=bundle bin=$2; shift ;;
    --prebuilt) mode=prebuilt bin=$2; shift ;;
    --out) out=$2; shift ;;
    --peers) peers=1 ;;
    --quick) quick=1 ;;
    *) echo "unknown argument: $1 (see the head of $0)" >&2; exit 2 ;;
  esac
  shift
done

# Builds the binaries and copies them to $1: the cudamin binary and the gpu test. They are
# built for x86-64-v3 (AVX2, FMA), not for this machine's CPU as .cargo/config.toml asks, since
# they run on another machine; in a target dir of their own, so that the usual one keeps its
# builds.
bundle() {
  local dir=$1
  export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-cpu=x86-64-v3"
  export CARGO_TARGET_DIR=target/portable
  CUDAMIN_REQUIRE_PTX=1 cargo build --release --features cuda || return 1
  local test
  test=$(CUDAMIN_REQUIRE_PTX=1 cargo test --release --features cuda --test gpu --no-run \
    --message-format=json | grep '"kind":\["test"\],.*"name":"gpu"' \
    | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
  [ -n "$test" ] || { echo "cargo did not name the gpu test binary" >&2; return 1; }
  local arrays
  arrays=$(CUDAMIN_REQUIRE_PTX=1 cargo test --release --features cuda --test device_arrays \
    --no-run --message-format=json | grep '"kind":\["test"\],.*"name":"device_arrays"' \
    | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
  [ -n "$arrays" ] || { echo "cargo did not name the device_arrays test binary" >&2; return 1; }
  mkdir -p "$dir"
  cp target/portable/release/cudamin "$dir/cudamin"
  cp "$test" "$dir/gpu-test"
  cp "$arrays" "$dir/device-arrays-test"
  strip "$dir/cudamin" "$dir/gpu-test" "$dir/device-arrays-test" 2>/dev/null || true
  # Each binary embeds the PTX as text, which gzip shrinks several times: the bundle then
  # travels within a device call's 64 MiB. --prebuilt unpacks them.
  gzip -9 -f "$dir/cudamin" "$dir/gpu-test" "$dir/device-arrays-test"
  # The Python package with the cuda feature, for the peers' rows that pass torch tensors;
  # auditwheel is skipped, since it would copy this machine's libcuda into the wheel.
  local venv=$PWD/target/python-venv
  if [ -x "$venv/bin/maturin" ]; then
    rm -rf "$dir/wheels"
    VIRTUAL_ENV=$venv CUDAMIN_REQUIRE_PTX=1 "$venv/bin/maturin" build --release --locked \
      --features cuda --auditwheel skip -m python/Cargo.toml -o "$dir/wheels" || return 1
  else
    echo "no maturin in $venv (bash .ci/python makes it): the bundle has no Python wheel" >&2
  fi
}

case $mode in
  bundle) bundle "$bin"; exit ;;
  build) bin=target/gpu-bundle; bundle "$bin" || exit 1 ;;
  prebuilt) ;;
esac
# A bundle's binaries come gzipped: unpack them once, beside the report.
if compgen -G "$bin/*.gz" >/dev/null; then
  mkdir -p "$out/bin"
  for packed in "$bin"/*.gz; do
    gunzip -c "$packed" >"$out/bin/$(basename "$packed" .gz)" || exit 1
  done
  chmod +x "$out/bin"/*
  [ -d "$bin/wheels" ] && ln -sfn "$(cd "$bin" && pwd)/wheels" "$out/bin/wheels"
  bin=$out/bin
fi
[ -x "$bin/cudamin" ] || chmod +x "$bin"/*
cudamin=$bin/cudamin
mkdir -p "$out"
report=$out/report.md
: >"$report"

# Appends a heading, the command and its output (in a code block) to the report, and echoes
# the output. Returns the command's status.
step() {
  local title=$1; shift
  printf '\n## %s\n\n```\n$ %s\n' "$title" "$*" >>"$report"
  echo "== $title" >&2
  "$@" 2>&1 | tee -a "$report"
  local status=${PIPESTATUS[0]}
  printf '```\nexit status %s\n' "$status" >>"$report"
  return "$status"
}

# Runs compute-sanitizer's tool $1 on the rest of the command line; prints its summary line.
sanitize() {
  local tool=$1; shift
  compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 20 "$@" 2>&1 \
    | grep -E '^=========' | grep -vE 'COMPUTE-SANITIZER$'
  return "${PIPESTATUS[0]}"
}

failures=()
check() { step "$@" || failures+=("$1"); }

{
  echo "# cudamin on a GPU: check report"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n)"
} >>"$report"
check "device" nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
  --format=csv
check "cudamin info" "$cudamin" info
# A device compiles each kernel on its first launch: the first eval (an empty cache forces
# it) times the JIT of the kernels it launches; the second hits the driver's compute cache, as
# every later run on this machine does.
cold_cache=$(mktemp -d)
for run in "empty cache" "cache warm"; do
  check "kernel load, lsq-expsin exact ($run)" env CUDA_CACHE_PATH="$cold_cache" \
    "$cudamin" eval lsq-expsin --backend cuda --repeat 1
done
rm -rf "$cold_cache"

check "tests/gpu.rs" env CUDAMIN_REQUIRE_GPU=1 "$bin/gpu-test" --include-ignored --test-threads=1 --nocapture
if [ -x "$bin/device-arrays-test" ]; then
  check "tests/device_arrays.rs" env CUDAMIN_REQUIRE_GPU=1 "$bin/device-arrays-test" \
    --test-threads=1 --nocapture
fi
# The bundle's Python wheel, unpacked beside the report for this run alone: the peers then
# also time cudamin from Python with torch tensors on the device as x0.
wheel=$(ls "$bin"/wheels/*.whl 2>/dev/null | head -1)
if [ -n "$wheel" ]; then
  check "cudamin's Python package (from the bundle)" python3 -m pip install --quiet --no-deps \
    --no-index --upgrade --target "$out/python" "$wheel" \
    && export PYTHONPATH="$out/python${PYTHONPATH:+:$PYTHONPATH}"
fi

big=100000000 points=10000000
[ $quick = 1 ] && big=1000000 points=100000

# Solves seed-expsum at n = $big with method $1 on the GPU and prints the result's scalar
# fields (everything before the vector x, which at n = 10⁸ is gigabytes of text).
big_solve() {
  local json=$out/big-solve.json status
  "$cudamin" solve seed-expsum --n "$big" --method "$1" --backend cuda --json >"$json"
  status=$?
  head -c 4096 "$json" | sed 's/,"x":\[.*/}/'
  echo
  rm -f "$json"
  return $status
}
check "seed-expsum, n = $big, L-BFGS on the GPU" big_solve lbfgs
check "seed-expsum, n = $big, BFGS on the GPU" big_solve bfgs

# L-BFGS-B with half the variables at a bound, GPU then CPU: the Cauchy walk passes nearly
# every breakpoint in its first iteration (BENCHMARKS.md, "L-BFGS-B and L-BFGS on device
# vectors (H200)": 9.4 s on an H200 when it gathered them one by one, 0.5 s on 16 cores). The
# GPU's line `device` counts its launches, waits and copies.
bounded_solves() {
  local backend status=0
  for backend in cuda cpu; do
    "$cudamin" solve ext-rosenbrock --n "$((big / 100))" --method lbfgsb --upper 0.9 \
      --backend "$backend" | grep -E '^(backend|status|nit|elapsed|device|active)' || status=1
  done
  return $status
}
check "ext-rosenbrock, n = $((big / 100)), L-BFGS-B below 0.9, GPU then CPU" bounded_solves

if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck synccheck; do
    check "compute-sanitizer $tool: seed-expsum eval" sanitize $tool \
      "$cudamin" eval seed-expsum --n 100000 --backend cuda --grad central --repeat 1
    check "compute-sanitizer $tool: rosenbrock eval (banded, odd block)" sanitize $tool \
      "$cudamin" eval rosenbrock --n 10001 --backend cuda --threads 100 --repeat 1
    check "compute-sanitizer $tool: lsq-expsin eval, 10⁵ points" sanitize $tool \
      "$cudamin" eval lsq-expsin --points 100000 --backend cuda --grad central --repeat 1
    check "compute-sanitizer $tool: mgh-16 eval (dense)" sanitize $tool \
      "$cudamin" eval mgh-16 --backend cuda --repeat 1
    check "compute-sanitizer $tool: L-BFGS solve (vectors on the device)" sanitize $tool \
      "$cudamin" solve seed-expsum --n 100000 --method lbfgs --backend cuda
    check "compute-sanitizer $tool: bounded L-BFGS-B solve (box passes on the device)" \
      sanitize $tool "$cudamin" solve ext-rosenbrock --n 100000 --method lbfgsb --upper 0.9 \
      --backend cuda
    check "compute-sanitizer $tool: raw kernels" sanitize $tool \
      env CUDAMIN_REQUIRE_GPU=1 "$bin/gpu-test" --include-ignored --test-threads=1 raw_kernels
  done
else
  echo "compute-sanitizer not found: sanitizer steps skipped" | tee -a "$report"
fi

# Value and gradient passes, GPU and CPU, median seconds per evaluation (`eval --repeat`).
timings() {
  printf '%-15s %9s %9s %-5s %-8s %12s %12s\n' problem n points where grad value_s grad_s
  local problem n pts where grad line status=0
  while read -r problem n pts; do
    for where in cuda cpu; do
      for grad in exact forward central; do
        local args=(eval "$problem" --backend "$where" --grad "$grad" --json)
        [ "$n" != - ] && args+=(--n "$n")
        [ "$pts" != - ] && args+=(--points "$pts")
        [ "$where" = cuda ] && args+=(--repeat 20) || args+=(--repeat 3)
        if ! line=$("$cudamin" "${args[@]}" 2>&1); then
          echo "$problem $where $grad: $line"
          status=1
          continue
        fi
        printf '%-15s %9s %9s %-5s %-8s %12s %12s\n' "$problem" "$n" "$pts" "$where" "$grad" \
          "$(sed 's/.*"value_s":\([^,]*\).*/\1/' <<<"$line")" \
          "$(sed 's/.*"grad_s":\([^,]*\).*/\1/' <<<"$line")"
      done
    done
  done
  return $status
}
check "timings" timings <<EOF
seed-expsum $((big / 10)) -
ext-rosenbrock $((big / 10)) -
rosenbrock $((big / 10)) -
lsq-expsin 16 $points
quadratic 300 -
mgh-16 - -
EOF

# The value pass of lsq-expsin reads its 16 data columns once: bytes / time against a
# device-to-device copy's bytes read + written / time.
bandwidth() {
  local line value_s
  line=$("$cudamin" eval lsq-expsin --n 16 --points "$points" --backend cuda --repeat 50 --json) \
    || return 1
  value_s=$(sed 's/.*"value_s":\([^,]*\).*/\1/' <<<"$line")
  python3 - "$value_s" "$points" <<'PY'
import sys
value_s, points = float(sys.argv[1]), int(sys.argv[2])
value_gbs = 16 * points * 8 / value_s / 1e9
print(f"lsq-expsin value pass: {value_s * 1e3:.3f} ms for {points} points, {value_gbs:.0f} GB/s "
      "(16 columns of f64 read once; launch and copy-back included)")
try:
    import torch
    x = torch.empty(2**28, dtype=torch.float64, device="cuda").normal_()
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(20):
        start.record(); y.copy_(x); stop.record(); stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    copy_gbs = 2 * x.numel() * 8 / sorted(times)[10] / 1e9
    print(f"device-to-device copy (torch, 2 GiB, median of 20): {copy_gbs:.0f} GB/s read + written")
    print(f"value pass / copy: {value_gbs / copy_gbs:.1%}")
except Exception as err:  # no torch, or no CUDA torch: the ratio is left out
    print(f"copy bandwidth not measured: {err}")
PY
}
check "lsq-expsin value pass against the copy bandwidth" bandwidth

if [ $peers = 1 ]; then
  peer_args=(--cudamin "$cudamin" --out "$out")
  [ $quick = 1 ] && peer_args+=(--quick)
  check "GPU peers (benches/gpu_peers.py)" python3 benches/gpu_peers.py "${peer_args[@]}"
  fit_args=(--cudamin "$cudamin" --out "$out/fit-peers.json")
  [ $quick = 1 ] && fit_args+=(--points 100000 --repeats 1)
  check "GPU fit peers (benches/gpu_fit_peers.py)" python3 benches/gpu_fit_peers.py "${fit_args[@]}"
  loop_args=(--out "$out/fit-loop.json")
  [ $quick = 1 ] && loop_args+=(--fits 100 --repeats 1)
  check "Consecutive Python fits (benches/gpu_fit_loop.py)" python3 benches/gpu_fit_loop.py "${loop_args[@]}"
  data_args=(--backend cuda --points 10000000 --out "$out/device-data.json")
  [ $quick = 1 ] && data_args+=(--points 1000000 --repeats 1)
  check "A fit from device data (benches/device_data_traffic.py)" python3 benches/device_data_traffic.py "${data_args[@]}"
  batch_args=(--backend cuda --fits 10000000 --out "$out/fit-batch-peers.json")
  [ $quick = 1 ] && batch_args+=(--fits 100000 --repeats 1)
  check "Batched small fits (benches/fit_batch_peers.py)" python3 benches/fit_batch_peers.py "${batch_args[@]}"
fi

{
  echo
  echo "## Summary"
  echo
  if [ ${#failures[@]} = 0 ]; then
    echo "Every step passed."
  else
    echo "Failed steps:"
    printf -- '- %s\n' "${failures[@]}"
  fi
} | tee -a "$report"
echo "report: $report" >&2
[ ${#failures[@]} = 0 ]
