"""Checks orgqr and ormqr as qr-gpu queues them (q_prepare_f32, then the
blocks on chip by q_apply_f32 or one trailing_tc_apply_f32 per 32-column
block, q_finish_f32, q_transpose_f32) under the host emulator, both ways:

    python3 tools/cudasim/check_q.py [--quick]

Reflectors come from LAPACK's geqrf (numpy's `qr(mode="raw")`) of random
matrices, rounded to float32; the reference is the float64 product of
those float32 reflectors. Per order (below, at and past 32-column blocks,
sizes that are not multiples of 4 through the scalar update): orgqr's
`||Q - Q64||_1 / (n eps)` and orthogonality, each ormqr product's
`||op(Q) C - op(Q64) C||_1 / (n eps ||C||_1)` at the project's bar (5), a
matrix with a NaN in its reflectors flagged (info 1, NaN result) without
changing the others' bits, a NaN in C left in its product (info 0), and the
same bits in a second run whose threads are scheduled in a random order.
Exits non-zero on any failure.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cudasim  # noqa: E402

from check_trailing_tc import defines as tc_defines  # noqa: E402

EPS = cudasim.EPS
OPS = {0: "orgqr", 1: "Q C", 2: "Q^T C", 3: "C Q", 4: "C Q^T"}


def factors(b, n, seed):
    """(H, tau) in float32 of `b` random matrices (row-major H)."""
    rng = np.random.default_rng(seed)
    h = np.empty((b, n, n), dtype=np.float32)
    tau = np.empty((b, n), dtype=np.float32)
    for m in range(b):
        a = rng.standard_normal((n, n)) * np.logspace(0, -2 * (m % 2), n)
        raw, t = np.linalg.qr(a, mode="raw")
        h[m] = raw.T
        tau[m] = t
    return h, tau


def q64(h, tau):
    n = h.shape[0]
    return cudasim.reflectors(h, tau[:n])[1] if n else np.eye(0)


def expected(op, q, c):
    """op(Q) C (left) or C op(Q) (right) in float64; `c` is n x k for the
    left, k x n for the right."""
    c = c.astype(np.float64)
    return {1: lambda: q @ c, 2: lambda: q.T @ c, 3: lambda: c @ q, 4: lambda: c @ q.T}[op]()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    orders = [(5, 3), (32, 8), (33, 5), (70, 12), (100, 40)]
    if args.quick:
        orders = [(33, 5), (70, 12)]
    failures, worst = [], 0.0
    with tempfile.TemporaryDirectory() as d:
        bins = {}
        for vec4 in (0, 1):
            defs = tc_defines(warps=4, stage=2 if vec4 else 0)
            defs["TC_VEC4"] = vec4
            defs["Q_CLUSTER"] = 1  # the emulator has no clusters
            bins[vec4] = cudasim.built(d, "q+trailing_tc", "q_harness.cpp",
                                       [f"-D{k}={v}" for k, v in defs.items()])
        for n, k in orders:
            b = 3
            h, tau = factors(b, n, [n, k])
            # Matrix 2: a NaN in its reflectors (below the diagonal).
            h_bad = h.copy()
            if n > 1:
                h_bad[2, n - 1, 0] = np.nan
            rng = np.random.default_rng([n, k, 7])
            qs = [q64(h[m], tau[m]) for m in range(b)]
            for op, path in [(op, path) for op in OPS for path in (0, 1)]:
                cols = n if op == 0 else k
                binary = bins[int(n % 4 == 0 and cols % 4 == 0)]
                left = op in (1, 2)
                c = rng.standard_normal((b, n, k) if left else (b, k, n)).astype(np.float32)
                arrays = [b, n, h, tau] + ([c] if op else [])
                tag = f"{OPS[op]} n {n} k {k} {'on chip' if path else 'per block'}"
                raw = cudasim.run(binary, [op, k, path], arrays)
                shape = (b, n, n) if op == 0 else c.shape
                out, info = cudasim.take(raw, [(shape, np.float32), ((b,), np.int32)])
                if cudasim.run(binary, [op, k, path], arrays, seed=n * 100 + op + 1) != raw:
                    failures.append(f"{tag}: a run in another thread order differs")
                for m in range(b):
                    if info[m] != 0:
                        failures.append(f"{tag} #{m}: info {info[m]}")
                        continue
                    if op == 0:
                        err = np.abs(out[m] - qs[m]).sum(axis=0).max() / (n * EPS)
                        o = out[m].astype(np.float64)
                        orth = np.abs(o.T @ o - np.eye(n)).sum(axis=0).max() / (n * EPS)
                        if not orth <= 25:
                            failures.append(f"{tag} #{m}: orth {orth:.3g}")
                    else:
                        ref = expected(op, qs[m], c[m])
                        cn = max(np.abs(c[m].astype(np.float64)).sum(axis=0).max(), 1e-300)
                        err = np.abs(out[m] - ref).sum(axis=0).max() / (n * EPS * cn)
                    worst = max(worst, err)
                    if not err <= 5:
                        failures.append(f"{tag} #{m}: error {err:.3g}")
                # A NaN in one matrix's reflectors: info 1, NaN, the rest unchanged.
                if n > 1:
                    c_bad = c.copy()
                    if op:
                        c_bad[1].flat[0] = np.nan  # a NaN in C is not an info
                    arrays = [b, n, h_bad, tau] + ([c_bad] if op else [])
                    out2, info2 = cudasim.take(cudasim.run(binary, [op, k, path], arrays),
                                               [(shape, np.float32), ((b,), np.int32)])
                    if info2[2] != 1 or not np.all(np.isnan(out2[2])):
                        failures.append(f"{tag}: NaN reflectors gave info {info2[2]}")
                    if not np.array_equal(out2[0], out[0]):
                        failures.append(f"{tag}: a NaN in another matrix changed matrix 0")
                    if op and (info2[1] != 0 or not np.isnan(out2[1]).any()):
                        failures.append(f"{tag}: a NaN in C gave info {info2[1]}")
                print(f"{tag}: checked", flush=True)
    cudasim.report(f"worst Q / product error {worst:.3g} (n eps units)", failures)


if __name__ == "__main__":
    main()
