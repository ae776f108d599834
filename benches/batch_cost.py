#!/usr/bin/env python3
"""What a batch of small fits costs on the GPU, counted offline: Gpufit's case, a symmetric 2-D
Gaussian on 5 × 5 pixels with Poisson noise, fitted by `cudamin fit --batch` on the PTX
simulator with `--cost`, in float64 and float32.

    cargo build --release
    python3 benches/batch_cost.py [--fits 512] [--cudamin target/release/cudamin]

A batch kernel runs each fit's whole Levenberg–Marquardt loop in one thread, so its stack
(local memory) is most of what it moves. The table gives, per fit, the batch kernel's local and
DRAM bytes, instructions and f64 operations, and the fits a second the counts model on an H100
at 10⁷ fits (docs/src/gpu.md), the tables' kernel included; then the words copied to the device
and back per fit, and the rate from host memory, copies included. Every spot has the same 25
pixels in the same order, so the predictors cross once for the whole batch. A model
steers the work between device runs; it is no measurement.
"""

import argparse
import json
import math
import os
import random
import subprocess
import tempfile


def spots(fits, path):
    """`fits` spots on a 5 × 5 grid, Poisson counts around a Gaussian plus an offset."""
    rng = random.Random(2026)
    with open(path, "w") as out:
        out.write("id,u,v,y\n")
        for f in range(fits):
            a, x0, y0 = rng.uniform(200, 500), rng.uniform(1.5, 2.5), rng.uniform(1.5, 2.5)
            s, b = rng.uniform(0.8, 1.2), rng.uniform(5, 15)
            for pixel in range(25):
                u, v = pixel % 5, pixel // 5
                mean = a * math.exp(-((u - x0) ** 2 + (v - y0) ** 2) / (2 * s * s)) + b
                out.write(f"{f},{u},{v},{poisson(rng, mean)}\n")


def poisson(rng, mean):
    """A Poisson draw by inversion: `mean` is at most a few hundred here."""
    k, p = 0, math.exp(-mean)
    total, u = p, rng.random()
    while u > total and k < 10_000:
        k += 1
        p *= mean / k
        total += p
    return k


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=512)
    parser.add_argument("--cudamin", default="target/release/cudamin")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "spots.csv")
        spots(args.fits, data)
        print(f"gauss-2d, {args.fits} fits of 25 points on the simulator; per fit, "
              "H100 modelled at 10⁷ fits")
        print("| dtype | local B | DRAM B | instructions | f64 ops | ms at 10⁷ | fits/s "
              "| words up | words back | fits/s from host |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for dtype in ("f64", "f32"):
            command = [args.cudamin, "fit", data, "--model", "gauss-2d", "--x", "u", "--x", "v",
                       "--batch", "id", "--p0", "300,2,2,1,10", "--backend", "sim", "--cost",
                       "--json", "--dtype", dtype]
            run = subprocess.run(command, check=True, capture_output=True, text=True)
            report = json.loads(run.stdout)
            k = next(k for k in report["kernels"] if k["kernel"] == "fit_gauss_2d_batch")
            names = ("local_bytes", "dram_bytes", "instructions", "fp64_ops")
            counts = [f"{k[name + '_per_point']:,.0f}" for name in names]
            ms, rate = report["modelled_h100_ms_at_1e7"], report["modelled_h100_fits_per_s"]
            up, back = report["words_to_device_per_fit"], report["words_to_host_per_fit"]
            from_host = report["modelled_h100_fits_per_s_from_host"]
            print(f"| {dtype} | {' | '.join(counts)} | {ms:.1f} | {rate:.3g} | {up:.1f} | {back:.1f} "
                  f"| {from_host:.3g} |")


if __name__ == "__main__":
    main()
