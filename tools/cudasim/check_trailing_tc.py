"""Checks the tensor-core trailing update (trailing_tc_apply_f32) under the
host emulator, in the variants the planner can ask for:

    python3 tools/cudasim/check_trailing_tc.py [--quick]

Per variant and update shape (tiles of 32 columns, odd and even counts, row
counts off the 16-row slabs): A2 - V (T^T (V^T A2)) against float64
(normwise relative error <= 2e-6), nothing outside A2 written, the same
bits in a second run whose threads are scheduled in a random order
(cp.async copies land only at their wait, so an unordered read of a ring
slot shows), and the same bits as the plain staged kernel where the kernel's
README says a switch keeps them (staging, L2 hints; the staged kernel
takes its update pass backward, the unstaged one forward). The emulated mma reads tf32 operands and adds
exactly, so the error bound speaks of the split and the kernel's indexing,
not of the tensor cores' rounding. Exits non-zero on any failure.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cudasim  # noqa: E402


def defines(warps=4, stage=2, hints=0):
    blocks = max(1, 16 // warps)
    d = dict(TC_SPLIT=0, TC_BN=32, TC_WARPS=warps, TC_MIN_BLOCKS=blocks, TC_FLUSH=1,
             TC_VEC4=1, TC_STAGE=stage, TC_ROWSPLIT=1, TC_L2HINT=hints if stage else 0)
    return d


def run(binary, d, n, p, w, h, v, t, seed=0):
    b = h.shape[0]
    ntrail = n - p - 32
    tiles = -(-ntrail // 32)
    blocks = tiles * b
    threads = 32 * d["TC_WARPS"]
    raw = cudasim.run(binary, [threads, blocks, p, w], [b, n, h, v, t], seed)
    out, oflow = cudasim.take(raw, [((b, n, n), np.float32), ((b,), np.int32)])
    return out, oflow, raw


def inputs(n, p, w, b=3):
    rng = np.random.default_rng([n, p, w])
    h = rng.standard_normal((b, n, n)).astype(np.float32)
    nrow = n - p
    v = np.zeros((b, n, 32), dtype=np.float32)
    t = np.zeros((b, 32, 32), dtype=np.float32)
    for m in range(b):
        vm = np.tril(0.3 * rng.standard_normal((nrow, 32)), -1)
        vm[np.arange(min(32, nrow)), np.arange(min(32, nrow))] = 1.0
        vm[:, w:] = rng.standard_normal((nrow, 32 - w))  # may hold anything
        v[m, :nrow] = vm
        tm = np.triu(0.5 * rng.standard_normal((32, 32)))
        tm[np.arange(32), np.arange(32)] = 1.0 + rng.random(32)
        t[m] = tm
    h[1] *= np.float32(1e-30)
    h[2] *= np.logspace(0, -4, n).astype(np.float32).reshape(n, 1)
    return h, v, t


def reference(h, v, t, p, w):
    n = h.shape[-1]
    out = h.astype(np.float64).copy()
    for m in range(h.shape[0]):
        a2 = out[m, p:, p + 32:]
        vm = v[m, :n - p, :w].astype(np.float64)
        tm = np.triu(t[m, :w, :w].astype(np.float64))
        out[m, p:, p + 32:] = a2 - vm @ (tm.T @ (vm.T @ a2))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    # (n, p, w): 3 tiles (the last 4 columns wide) over 100 rows; 5 tiles
    # over 168; one tile of 4 columns over 68 rows; 4 tiles over 192 rows.
    shapes = [(100, 0, 32), (200, 32, 32), (132, 64, 32), (224, 32, 32)]
    variants = {
        "staged ring": defines(),
        "unstaged": defines(stage=0),
        "hints 1": defines(hints=1),
        "hints 2": defines(hints=2),
        "8 warps": defines(warps=8),
    }
    same_as = {"unstaged": "staged ring", "hints 1": "staged ring",
               "hints 2": "staged ring"}
    if args.quick:
        shapes = shapes[:2]
    failures, worst = [], 0.0
    with tempfile.TemporaryDirectory() as d:
        bins = {}
        for name, defs in variants.items():
            binary = os.path.join(d, name.replace(" ", "_"))
            cudasim.build("trailing_tc", os.path.join(cudasim.HERE, "trailing_tc_harness.cpp"),
                          binary, [f"-D{k}={v}" for k, v in defs.items()])
            bins[name] = binary
        for n, p, w in shapes:
            h, v, t = inputs(n, p, w)
            ref = reference(h, v, t, p, w)
            raws = {}
            for name, defs in variants.items():
                out, oflow, raw = run(bins[name], defs, n, p, w, h, v, t)
                tag = f"{name} n {n} p {p} w {w}"
                # The second run schedules the threads in a random order: a
                # race between warps shows as other bits.
                if run(bins[name], defs, n, p, w, h, v, t, seed=n * 1000 + p + 1)[2] != raw:
                    failures.append(f"{tag}: a run in another thread order differs")
                raws[name] = raw
                for m in range(h.shape[0]):
                    a2, r2 = out[m, p:, p + 32:].astype(np.float64), ref[m, p:, p + 32:]
                    err = np.linalg.norm(a2 - r2) / max(np.linalg.norm(r2), 1e-300)
                    worst = max(worst, err)
                    if not err <= 2e-6:
                        failures.append(f"{tag} #{m}: relative error {err:.3g}")
                    mask = np.ones((n, n), dtype=bool)
                    mask[p:, p + 32:] = False
                    if not np.array_equal(out[m][mask], h[m][mask]):
                        failures.append(f"{tag} #{m}: written outside A2")
                if np.any(oflow != 0):
                    failures.append(f"{tag}: overflow marked")
                print(f"{tag}: checked", flush=True)
            for name, ref_name in same_as.items():
                if raws[name] != raws[ref_name]:
                    failures.append(f"{name} n {n} p {p} w {w}: bits differ from {ref_name}")
    cudasim.report(f"worst relative error {worst:.3g}", failures)


if __name__ == "__main__":
    main()
