"""Checks the register panel of a block alone per matrix under the host
emulator: panelreg_factor_f32 in every variant the planner can ask a block
alone for (whole rows and halves):

    python3 tools/cudasim/check_panelreg.py [--quick]

Per variant and panel (orders and panel columns around the row limits):
the panel's factorization against its input (scaled residual <= 5 and
orthogonality <= 25, in float64), V's buffer against H's reflectors, T
against LAPACK's larft (I - V T V^T equals the product of the reflectors),
tau = 0 for a zero column, and no overflow mark; every variant runs a
second time, its threads in a random order (cudasim.h), with the same
bits. Exits non-zero on any failure.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cudasim  # noqa: E402

HARNESS = "panel_harness.cpp"


def threads_for_rows(rows, rpt, min_threads, max_threads):
    t = -(-rows // rpt)
    t = -(-t // 64) * 64
    return min(max(t, 64, min_threads), max_threads)


def run(binary, threads, p, w, a, seed=0):
    b, n = a.shape[0], a.shape[-1]
    raw = cudasim.run(binary, [threads, p, w], [b, n, a], seed)
    h, tau, v, t, oflow = cudasim.take(raw, [((b, n, n), np.float32), ((b, n), np.float32),
                                             ((b, n, 32), np.float32), ((b, 32, 32), np.float32),
                                             ((b,), np.int32)])
    return h, tau, v, t, oflow, raw


def check_panel(a, h, tau, v, t, oflow, p, w, tag):
    """Failures of one matrix's factorization of columns p..p+w (rows p..):
    the residual and orthogonality, the V and T buffers, the overflow mark,
    nothing written outside."""
    bad = []
    hp = h[p:, p:p + w].astype(np.float64)
    taus = tau[p:p + w].astype(np.float64)
    vq = cudasim.reflectors(hp, taus)
    sfr, orth = cudasim.gate(a[p:, p:p + w], hp, taus, vq[1])
    if not (sfr <= 5 and orth <= 25):
        bad.append(f"{tag}: sfr {sfr:.3g} orth {orth:.3g}")
    bad += check_vt(hp, v, t, w, tag, vq)
    if oflow != 0:
        bad.append(f"{tag}: overflow marked")
    # Outside the panel nothing changes.
    if not np.array_equal(np.delete(h, np.s_[p:p + w], axis=1), np.delete(a, np.s_[p:p + w], axis=1)) \
            or not np.array_equal(h[:p, p:p + w], a[:p, p:p + w]):
        bad.append(f"{tag}: entries outside the panel's rows and columns changed")
    return bad, sfr, orth


def check_vt(hp, v, t, w, tag, vq):
    """Failures of a panel's V buffer (H's reflectors, zero padded) and T
    (I - V T V^T the reflectors' product); `vq`: cudasim.reflectors' V and
    Q."""
    bad = []
    rows = hp.shape[0]
    vv, q = vq
    want_v = np.zeros((rows, 32))
    want_v[:, :w] = vv
    if not np.array_equal(v[:rows].astype(np.float64), want_v):
        bad.append(f"{tag}: V's buffer differs from H's reflectors")
    tt = t.astype(np.float64)
    if np.any(tt[np.tril_indices(32, -1)] != 0) or np.any(tt[w:, :] != 0) or np.any(tt[:, w:] != 0):
        bad.append(f"{tag}: T is not upper triangular within w x w")
    qt = np.eye(rows) - vv @ tt[:w, :w] @ vv.T
    if np.abs(qt - q).max() > 1e-5 * max(1.0, np.abs(q).max()) * w:
        bad.append(f"{tag}: I - V T V^T is not the reflectors' product ({np.abs(qt - q).max():.3g})")
    return bad


def inputs(rng, b, n, p, zc):
    a = rng.standard_normal((b, n, n)).astype(np.float32)
    if b > 1:
        a[1] *= np.float32(1e-30)
    if b > 2:
        a[2, :, zc] = 0.0  # a zero column inside the panel
    if b > 3:
        a[3] = (rng.standard_normal((n, 1)) + 1e-4 * rng.standard_normal((n, n))).astype(np.float32)
    if b > 4:
        a[4] *= np.logspace(0, -6, n).astype(np.float32).reshape(n, 1)
    if b > 5:
        # Nearly upper triangular: every squared norm below a diagonal is
        # about 1e-22, under the tiny bound, so each reflector takes the
        # double path with a non-zero tau.
        a[5] = np.triu(a[5]) + np.float32(1e-12) * np.tril(a[5], -1)
    # One column of tiny entries (the panel's largest stays near 1): its
    # norm falls under the tiny bound with a reflector that matters, at a
    # row scale of about 1e20 (float32) and 1e31 (double, not `fast`).
    for m, tiny in ((6, 1e-20), (7, 1e-31)):
        if b > m:
            a[m, :, zc - 2 if zc - 2 >= p else zc] *= np.float32(tiny)
    return a


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    # (max threads, min threads, rows per thread) of the plans of a block
    # alone: 640 x 512 (256, 2), 40 x 352 (512 from 256, 1).
    shapes = [(256, 64, 2), (512, 256, 1)]
    # The whole-row kernel, then the halves kernel (PREG_HALVES).
    variants = [0, 1]
    panels = [(512, 0, 32), (352, 0, 32), (352, 320, 32), (100, 64, 32), (100, 96, 4), (200, 32, 32),
              (1024, 0, 32)]
    if args.quick:
        panels = panels[1:2] + panels[4:5]
    failures, worst = [], (0.0, 0.0)

    def check_run(binary, threads, n, p, w, tag):
        nonlocal worst
        zc = p + min(5, w - 1)
        # The same input for every variant of a panel.
        a = inputs(np.random.default_rng([n, p, w]), 8, n, p, zc)
        h, tau, v, t, oflow, raw = run(binary, threads, p, w, a)
        # The second run in a random thread order (cudasim.h).
        if run(binary, threads, p, w, a, seed=n + p + w)[5] != raw:
            failures.append(f"{tag}: a run in another thread order differs")
        for m in range(a.shape[0]):
            bad, sfr, orth = check_panel(a[m], h[m], tau[m], v[m], t[m], oflow[m], p, w,
                                         f"{tag} #{m}")
            failures.extend(bad)
            worst = (max(worst[0], sfr), max(worst[1], orth))
        if tau[2, zc] != 0:
            failures.append(f"{tag}: tau of a zero column {tau[2, zc]}")
        print(f"{tag}: checked", flush=True)

    with tempfile.TemporaryDirectory() as d:
        for max_t, min_t, rpt in shapes:
            for halves in variants:
                if halves and rpt != 1:
                    continue  # the planner gives the halves kernel one-row plans only
                for n, p, w in panels:
                    threads = threads_for_rows(n - p, rpt, min_t, max_t)
                    # The planner keeps a panel within its block's rows.
                    if (halves and threads < 64) or threads * rpt < n - p:
                        continue
                    defs = [f"-DPREG_THREADS={threads}", f"-DPREG_RPT={2 * rpt if halves else rpt}",
                            "-DPREG_CLUSTER=0", f"-DPREG_HALVES={halves}"]
                    binary = cudasim.built(d, "panelreg", HARNESS, defs)
                    tag = f"{threads}x{rpt} halves {halves} n {n} p {p} w {w}"
                    check_run(binary, threads, n, p, w, tag)
    cudasim.report(f"worst sfr {worst[0]:.3g}, worst orth {worst[1]:.3g}", failures)


if __name__ == "__main__":
    main()
