#!/usr/bin/env python3
"""One large `curve_fit` on a Session from data where they lie: numpy arrays on the host, the
session's own device arrays, and (on a GPU with CUDA torch) torch CUDA tensors, which the fit
reads through `__cuda_array_interface__`.

Issue 66's data half: a fit from device columns should move only scalars besides the solve's
own, and save the upload a host fit pays every call. For each source the table gives what the
session's device did during the call (bytes each way, launches, waits), the median wall time of
the call, and the fitted parameters' largest difference from the host fit's. The sources
alternate (A, B, C, A, B, C, …) after one untimed call each.

On a GPU machine:
    PYTHONPATH=python python3 benches/device_data_traffic.py --backend cuda --points 10000000
Offline, on the simulator, at a small size:
    PYTHONPATH=python target/python-venv/bin/python benches/device_data_traffic.py
"""

import argparse
import json
import statistics
import time

import numpy as np

import cudamin

KEYS = ("h2d_bytes", "d2h_bytes", "launches", "waits", "allocations")


def sources(session, x, y, sigma):
    """Each way of handing the fit its columns: (name, xdata, ydata, sigma)."""
    found = [("numpy", x, y, sigma)]
    if session.backend != "cpu":
        found.append(("session arrays", *(session.to_device(a) for a in (x, y, sigma))))
    try:
        import torch
        if session.backend == "cuda" and torch.cuda.is_available():
            found.append(("torch CUDA", *(torch.from_numpy(a).cuda() for a in (x, y, sigma))))
    except ImportError:
        pass
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="sim")
    parser.add_argument("--points", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", help="also write the rows as JSON here")
    args = parser.parse_args()
    x = np.linspace(0.0, 10.0, args.points)
    y = 3.0 * np.exp(-1.5 * x) + 0.5 * np.exp(-0.2 * x) + 0.01 * np.sin(37.0 * x)
    sigma = 0.5 + 0.01 * np.cos(x)
    p0 = [1.0, 1.0, 0.1, 0.1]
    rows = {}
    with cudamin.Session(backend=args.backend) as session:
        given = sources(session, x, y, sigma)
        for name, *columns in given:
            session.curve_fit("exp-decay", *columns[:2], sigma=columns[2], p0=p0)
            rows[name] = dict(times=[])
        for _ in range(args.repeats):
            for name, xd, yd, sd in given:
                before = session.traffic()
                start = time.perf_counter()
                popt, _ = session.curve_fit("exp-decay", xd, yd, sigma=sd, p0=p0)
                seconds = time.perf_counter() - start
                after = session.traffic()
                rows[name].update({k: after[k] - before[k] for k in KEYS}, popt=popt.tolist())
                rows[name]["times"].append(seconds)
        host = np.array(rows["numpy"]["popt"])
        print(f"exp-decay, {args.points} points with sigma, backend {session.backend}, "
              f"median of {args.repeats}")
        print(f"{'source':<16}{'h2d B':>12}{'d2h B':>10}{'launches':>10}{'waits':>7}"
              f"{'allocs':>8}{'time s':>10}{'|Δpopt|':>10}")
        for name, row in rows.items():
            row["seconds"] = statistics.median(row["times"])
            row["popt_difference"] = float(np.max(np.abs(np.array(row["popt"]) - host)))
            print(f"{name:<16}{row['h2d_bytes']:>12}{row['d2h_bytes']:>10}{row['launches']:>10}"
                  f"{row['waits']:>7}{row['allocations']:>8}{row['seconds']:>10.4f}"
                  f"{row['popt_difference']:>10.1e}")
    if args.out:
        with open(args.out, "w") as out:
            json.dump(dict(points=args.points, backend=args.backend, rows=rows), out, indent=1)


if __name__ == "__main__":
    main()
