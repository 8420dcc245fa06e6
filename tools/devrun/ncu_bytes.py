"""Sums an ncu --csv run's HBM bytes and kernel time by kernel name.

usage: python3 ncu_bytes.py LABEL FILE.csv

ncu's CSV has one row per (kernel launch, metric): this prints, per kernel
name, the launches, GB read, GB written and milliseconds, then the totals,
under LABEL.
"""
import csv
import sys
from collections import defaultdict


def main():
    label, path = sys.argv[1], sys.argv[2]
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]
    rows = list(csv.DictReader(lines))
    if not rows:
        sys.exit(f"{label}: no ncu rows in {path}")
    scale = {"byte": 1e-9, "Kbyte": 1e-6, "Mbyte": 1e-3, "Gbyte": 1.0,
             "nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3,
             # ncu 2025 writes the short forms.
             "ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
    sums = defaultdict(lambda: defaultdict(float))
    launches = defaultdict(set)
    for r in rows:
        name = r["Kernel Name"].split("(")[0]
        launches[name].add(r["ID"])
        value = float(r["Metric Value"].replace(",", ""))
        sums[name][r["Metric Name"]] += value * scale.get(r["Metric Unit"], 1.0)
    keys = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum")
    print(f"== {label}: kernel, launches, GB read, GB written, ms")
    total = [0.0, 0.0, 0.0]
    for name in sorted(sums, key=lambda n: -sums[n][keys[0]] - sums[n][keys[1]]):
        v = [sums[name][k] for k in keys]
        total = [a + b for a, b in zip(total, v)]
        print(f"{name}, {len(launches[name])}, {v[0]:.3f}, {v[1]:.3f}, {v[2]:.3f}")
    print(f"total, {sum(len(s) for s in launches.values())}, {total[0]:.3f}, {total[1]:.3f}, {total[2]:.3f}")


if __name__ == "__main__":
    main()
