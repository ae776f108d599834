#!/usr/bin/env python3
"""gauss-peaks with 8 peaks (p = 25) on 10⁶ points: one cudamin binary against another, side
by side in one run (issue 26's target: this fit at least 2× faster than before the issue).

Writes the data once (a baseline and 8 Gaussians on [0, 100), noise σ = 0.05 to 0.15, fixed
seed) as an .npz, then alternates `BIN fit FILE --model gauss-peaks --params 25 --sigma s
--p0 … --json` between the binaries, `--repeat` times each; the time is the fit's own
`elapsed_s` (the solve, not reading the file). Both must end with the same parameters.

    python benches/peaks_before_after.py --before OLD/cudamin --after target/release/cudamin

(numpy needed; any venv of this repository's benches has it.)
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile

import numpy as np
from fit_peers import unbounded_flag

PEAKS = 8
BASELINE = 0.5


def truth():
    """θ = (c, a₀, μ₀, s₀, …): peaks of height 1 to 2.4 at 10, 22, …, 94, widths 1 to 2.4."""
    theta = [BASELINE]
    for i in range(PEAKS):
        theta += [1.0 + 0.2 * i, 10.0 + 12.0 * i, 1.0 + 0.2 * i]
    return np.array(theta)


def model(theta, x):
    y = np.full_like(x, theta[0])
    for a, m, s in theta[1:].reshape(-1, 3):
        y += a * np.exp(-0.5 * ((x - m) / s) ** 2)
    return y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True, help="the cudamin binary before the change")
    ap.add_argument("--after", required=True, help="the cudamin binary after it")
    ap.add_argument("--points", type=int, default=10**6)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(26)
    x = np.linspace(0.0, 100.0, args.points, endpoint=False)
    s = 0.05 + 0.1 * rng.random(args.points)
    y = model(truth(), x) + s * rng.standard_normal(args.points)
    p0 = truth() * np.where(np.arange(truth().size) % 3 == 2, 1.0, 1.05)  # heights, widths 5 % off
    path = os.path.join(tempfile.mkdtemp(), "peaks8.npz")
    np.savez(path, x=x, y=y, s=s)
    command = ["fit", path, "--model", "gauss-peaks", "--params", str(truth().size), "--sigma", "s",
               "--p0", ",".join(repr(float(v)) for v in p0), "--backend", "cpu", "--json"]
    runs = {"before": [], "after": []}
    for _ in range(args.repeat):
        for name in runs:  # alternating
            binary = getattr(args, name)
            out = subprocess.run([binary] + command + unbounded_flag(binary), capture_output=True,
                                 text=True, check=True)
            runs[name].append(json.loads(out.stdout))
    before, after = runs["before"][-1], runs["after"][-1]
    assert np.allclose(before["x"], after["x"], rtol=1e-6, atol=1e-9), (before["x"], after["x"])
    median = {name: statistics.median(r["elapsed_s"] for r in rs) for name, rs in runs.items()}
    print(f"gauss-peaks, {PEAKS} peaks (p = {truth().size}), {args.points} points, LM, exact "
          f"Jacobian, CPU ({os.cpu_count()} cores), median of {args.repeat}")
    print("\n| binary | fit time (s) | before / this | nfev | njev | status | rss | max |θ − θ_true| |")
    print("|---|---|---|---|---|---|---|---|")
    for name, rs in runs.items():
        r = rs[-1]
        off = np.max(np.abs(np.array(r["x"]) - truth()))
        print(f"| {name} | {median[name]:.3f} | {median['before'] / median[name]:.2f} | {r['nfev']} | "
              f"{r['njev']} | {r['status']} | {r['rss']:.6e} | {off:.2e} |")


if __name__ == "__main__":
    main()
