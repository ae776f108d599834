#!/usr/bin/env python3
"""One cudamin binary's fits against another's, side by side in one run: the 10⁶-point fits of
`benches/fit_peers.py` (gauss-peaks p = 10, expsin p = 16; same data, same starts), `cudamin
fit … --json` alternating between the binaries, `--repeats` times each. The time is the fit's
own `elapsed_s` (the solve, not reading the file). Both must end at the same Σr².

    python benches/fit_before_after.py --before OLD/cudamin --after target/release/cudamin

(numpy needed; any venv of this repository's benches has it.)
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile

import numpy as np

from fit_peers import POINTS, cases, unbounded_flag


def fit(binary, path, name, p, p0):
    out = subprocess.run(
        [binary, "fit", path, "--model", name, "--params", str(p), "--p0",
         ",".join(repr(float(v)) for v in p0), "--json"] + unbounded_flag(binary),
        check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", required=True)
    parser.add_argument("--points", type=int, default=POINTS)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"{args.points} points, median of {args.repeats}, binaries alternating\n")
    print("| model | binary | fit time (s) | after / before | nfev | njev | status | rss |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, p, x, y, p0, _, _ in cases(args.points):
            path = os.path.join(tmp, f"{name}.npz")
            np.savez(path, x=x, y=y)
            runs = {"before": [], "after": []}
            for _ in range(args.repeats):
                for label in runs:
                    runs[label].append(fit(getattr(args, label), path, name, p, p0))
            base = statistics.median(r["elapsed_s"] for r in runs["before"])
            for label, reports in runs.items():
                seconds = statistics.median(r["elapsed_s"] for r in reports)
                r = reports[-1]
                print(f"| {name}, p = {p} | {label} | {seconds:.3f} | {seconds / base:.2f} | "
                      f"{r['nfev']} | {r['njev']} | {r['status']} | {r['rss']:.12e} |")


if __name__ == "__main__":
    main()
