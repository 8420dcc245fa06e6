"""Checks the smem family's warp kernel (smem_warp_f32) under the host
emulator on DESIGN section 2's distributions and the range edges:

    python3 tools/cudasim/check_smem.py [--orders 1,2,...] [--batch B]

For every order and distribution: the gate of DESIGN section 1 with the
project's bar (sfr <= 5, orth <= 25) per matrix, R's diagonal signs and
tau against LAPACK's dgeqrf on the same float32 input (numpy), info codes
(1 for non-finite input, 2 for an R that overflows float32, NaN-filled),
the same bits on a second run with the threads in a random order. Exits non-zero on any failure.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cudasim  # noqa: E402

EPS = cudasim.EPS


def col_scale(a, cond):
    n = a.shape[-1]
    return a * np.logspace(0.0, -float(cond), n, dtype=np.float32) if cond else a


def case(rng, b, n, name, cond=1):
    a = rng.standard_normal((b, n, n)).astype(np.float32)
    r = max(1, 3 * n // 4)
    if name == "dense":
        return col_scale(a, cond)
    if name == "upper":
        a = np.triu(a)
        a[:, np.arange(n), np.arange(n)] += np.linspace(1.0, 0.25, n, dtype=np.float32)
        return col_scale(a, cond)
    if name == "diagonal":
        d = np.logspace(0.0, -max(cond, 2), n) * rng.choice([-1.0, 1.0], (b, n))
        out = np.zeros_like(a)
        out[:, np.arange(n), np.arange(n)] = d
        return out
    if name == "rankdef":
        a[:, :, r:] = 0.0
        return col_scale(a, cond)
    if name == "nearrank":
        t = n - r
        if t > 0:
            a[:, :, r:] = a[:, :, :t] + 1e-5 * rng.standard_normal((b, n, t)).astype(np.float32)
        return col_scale(a, cond)
    if name == "clustered":
        s = np.ones(n, dtype=np.float32)
        s[n // 2:] = 4 * EPS
        if n >= 8:
            s[n // 2 - 2:n // 2 + 2] = np.sqrt(EPS)
        return a * s
    if name == "band":
        bw = max(2, min(32, n // 32))
        i = np.arange(n)
        a = a * (np.abs(i[:, None] - i[None, :]) <= bw)
        a[:, i, i] += np.linspace(1.0, 0.5, n, dtype=np.float32)
        return col_scale(a, cond)
    if name == "nearcollinear":
        base = rng.standard_normal((b, n, 1)).astype(np.float32)
        return col_scale(base + 1e-4 * rng.standard_normal((b, n, n)).astype(np.float32), cond)
    if name == "rowscale":
        return np.logspace(0.0, -max(cond, 4), n).astype(np.float32).reshape(1, n, 1) * a
    if name == "tiny":
        return a * np.float32(1e-30)
    if name == "huge":
        return a * np.float32(1e30)
    if name == "zero":
        return np.zeros_like(a)
    if name == "subnormal":
        return a * np.float32(1e-39)
    raise ValueError(name)


DISTS = ["dense", "upper", "diagonal", "rankdef", "nearrank", "clustered", "band",
         "nearcollinear", "rowscale", "tiny", "huge", "zero", "subnormal"]


def run(binary, entry, threads, a, seed=0):
    b, n = a.shape[0], a.shape[-1]
    raw = cudasim.run(binary, [entry, threads], [b, n, a], seed)
    h, tau, info = cudasim.take(raw, [((b, n, n), np.float32), ((b, n), np.float32),
                                      ((b,), np.int32)])
    return h, tau, info, raw


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--orders", default="1,2,3,4,5,7,8,13,16,17,24,31,32")
    ap.add_argument("--batch", type=int, default=4)
    args = ap.parse_args()
    rng = np.random.default_rng(20261204)
    failures = []
    worst = (0.0, 0.0)
    with tempfile.TemporaryDirectory() as d:
        binary = os.path.join(d, "smem_warp")
        cudasim.build("smem", os.path.join(cudasim.HERE, "smem_harness.cpp"), binary,
                      ["-DSMEM_TPC=1", "-DSMEM_ROWS=0", "-DSMEM_WARP=1"])
        for n in map(int, args.orders.split(",")):
            for name in DISTS:
                a = case(rng, args.batch, n, name)
                h, tau, info, raw = run(binary, "warp", 32, a)
                # The second run in a random thread order (cudasim.h).
                raw2 = run(binary, "warp", 32, a, seed=1 + n)[3]
                tag = f"n={n} {name}"
                if raw != raw2:
                    failures.append(f"{tag}: a run in another thread order differs")
                for m in range(args.batch):
                    if info[m] != 0:
                        failures.append(f"{tag} #{m}: info {info[m]}")
                        continue
                    sfr, orth = cudasim.gate(a[m], h[m], tau[m])
                    worst = (max(worst[0], sfr), max(worst[1], orth))
                    if not (sfr <= 5 and orth <= 25):
                        failures.append(f"{tag} #{m}: sfr {sfr:.3g} orth {orth:.3g}")
                    if name in ("zero",) and np.any(tau[m] != 0):
                        failures.append(f"{tag} #{m}: tau of a zero matrix {tau[m]}")
                    # LAPACK's convention: tau and R's diagonal as dgeqrf
                    # gives them for the same input, where that column's
                    # reflector is well determined (dense inputs).
                    if name == "dense" and n > 1:
                        hr, tr = np.linalg.qr(a[m].astype(np.float64), mode="raw")
                        rd = np.diag(hr.T)
                        if np.max(np.abs(np.diag(h[m]) - rd) / np.abs(rd)) > 1e-3 or \
                           np.max(np.abs(tau[m] - tr)) > 1e-3:
                            failures.append(f"{tag} #{m}: R diagonal or tau unlike dgeqrf")
        # Non-finite input: info 1, NaN-filled; other matrices unaffected.
        for n in (1, 5, 32):
            a = case(rng, 3, n, "dense")
            a[1, n // 2, n - 1] = np.nan
            a[2, 0, 0] = np.inf
            h, tau, info, _ = run(binary, "warp", 32, a)
            if list(info) != [0, 1, 1] or not np.all(np.isnan(h[1:])) or not np.all(np.isnan(tau[1:])):
                failures.append(f"n={n}: non-finite input gave info {list(info)}")
        # R overflows float32: info 2, NaN-filled.
        for n in (2, 9, 32):
            a = np.full((2, n, n), 3.0e38, dtype=np.float32)
            a[1] = case(rng, 1, n, "dense")[0]
            h, tau, info, _ = run(binary, "warp", 32, a)
            if list(info) != [2, 0] or not np.all(np.isnan(h[0])):
                failures.append(f"n={n}: overflowing R gave info {list(info)}")
    cudasim.report(f"worst sfr {worst[0]:.3g}, worst orth {worst[1]:.3g}", failures)


if __name__ == "__main__":
    main()
