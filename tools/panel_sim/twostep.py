"""CPU emulation of panel.cu's PANEL_TWOSTEP loop (one block alone, eight
warps): float32 row operations, double sums in the kernel's orders, the
same fallbacks. It checks the two-step formulas (reflectors, coefficients,
Gram entries, the cancellation guard) on panels of every kind, not the CUDA
mechanics (barriers, shuffles, shared memory), which only the GPU tests do.

usage: python3 tools/panel_sim/twostep.py   (numpy; prints per panel
||A - QR|| / (||A|| m eps), ||Q^T Q - I|| / (m eps), the largest Gram error
against V^T V and how many steps took one or two reflectors)"""
import numpy as np, sys
f32 = np.float32
TINY = 8.673617379884035e-19
W = 8  # warps
NB = 32

def fmaf(a, b, c):
    return (np.float64(a) * np.float64(b) + np.float64(c)).astype(np.float32)

def warps_sum(x):  # x: (W, 32) float32 -> pairwise double
    y = x.astype(np.float64).copy()
    h = 1
    while h < W:
        for q in range(0, W - h, 2 * h):
            y[q] += y[q + h]
        h *= 2
    return y[0]

def scaled_reflector(alpha, xn2):
    a = float(alpha)
    beta = -np.copysign(np.sqrt(a * a + xn2), a)
    d = a - beta
    q = 1.0 / (d * beta)
    return f32(beta), f32(-(d * d) * q), beta * q

def make_reflector(alpha, xn2):
    if xn2 == 0.0:
        return f32(alpha), f32(0.0), 0.0
    a = float(alpha)
    beta = -np.copysign(np.sqrt(a * a + xn2), a)
    return f32(beta), f32((beta - a) / beta), 1.0 / (a - beta)

def panel(A, w, stats):
    rows = A.shape[0]
    s = np.zeros((rows, NB), np.float32)
    s[:, :w] = A[:, :w]
    lane = np.arange(NB)
    def emulate_pass(first, rows, rowfun, sp, sq, sum_from, unroll):
        # warp wp handles rows first+wp, first+wp+W, ...; accumulators u cycle
        P = np.zeros((W, NB), np.float32); Q = np.zeros((W, NB), np.float32)
        for wp in range(W):
            ap = [np.zeros(NB, np.float32) for _ in range(unroll)]
            aq = [np.zeros(NB, np.float32) for _ in range(unroll)]
            k = 0
            for l in range(first + wp, rows, W):
                u = k % unroll; k += 1
                o = rowfun(l)
                yp = o[sp]; yq = o[sq]
                inn = l > sum_from
                ap[u] = fmaf(yp if inn else f32(0), o, ap[u])
                aq[u] = fmaf(yq if inn else f32(0), o, aq[u])
            if unroll == 2:
                P[wp] = (ap[0].astype(np.float64) + ap[1]).astype(np.float32)
                Q[wp] = (aq[0].astype(np.float64) + aq[1]).astype(np.float32)
            else:
                P[wp] = ((ap[0].astype(np.float64) + ap[1]) + (ap[2].astype(np.float64) + ap[3])).astype(np.float32)
                Q[wp] = ((aq[0].astype(np.float64) + aq[1]) + (aq[2].astype(np.float64) + aq[3])).astype(np.float32)
        return P, Q
    # pair_dots: rows >= 2, sums of columns 0 and 1, two accumulators a warp
    P = np.zeros((W, NB), np.float32); Q = np.zeros((W, NB), np.float32)
    for wp in range(W):
        ap = [np.zeros(NB, np.float32)] * 2; aq = [np.zeros(NB, np.float32)] * 2
        ap = [ap[0].copy(), ap[1].copy()]; aq = [aq[0].copy(), aq[1].copy()]
        k = 0
        for l in range(2 + wp, rows, W):
            u = k % 2; k += 1
            ap[u] = fmaf(s[l, 0], s[l], ap[u]); aq[u] = fmaf(s[l, 1], s[l], aq[u])
        P[wp] = (ap[0].astype(np.float64) + ap[1]).astype(np.float32)
        Q[wp] = (aq[0].astype(np.float64) + aq[1]).astype(np.float32)
    gram = np.zeros((NB, NB)); taus = np.zeros(NB, np.float32)
    j = 0
    while j < w:
        pl = warps_sum(P); ql = warps_sum(Q)
        arow = s[j].copy(); brow = s[j + 1].copy() if j + 1 < rows else np.zeros(NB, np.float32)
        alpha = arow[j]; x1 = brow[j]
        sl = np.float64(x1) * brow.astype(np.float64) + pl
        sj = sl[j]
        two = False
        if j + 1 < w and sj >= TINY:
            b0, tau0, s0 = scaled_reflector(alpha, sj)
            vta0 = arow.astype(np.float64) + s0 * sl
            upd0 = (lane > j) & (lane < w)
            w0c = np.where(upd0, (np.float64(tau0) * vta0).astype(np.float32), f32(0))
            w0n = w0c[j + 1]
            pjn = pl[j + 1]; pjj = pl[j]; qnn = ql[j + 1]
            al = s0 * np.float64(w0n)
            t1 = 2.0 * al * pjn; t2 = al * al * pjj
            xn2b = (qnn - t1) + t2
            if xn2b >= TINY and xn2b >= 0.5 * (qnn + abs(t1) + t2):
                two = True
                fs0 = f32(s0)
                v01 = f32(x1 * fs0)
                b1 = np.where(lane == j, v01, fmaf(-v01, w0c, brow))
                alpha1 = b1[j + 1]
                b1r, tau1, s1 = scaled_reflector(alpha1, xn2b)
                bl = s0 * w0c.astype(np.float64)
                qp = ((ql - bl * pjn) - al * pl) + al * bl * pjj
                vta1 = b1.astype(np.float64) + s1 * qp
                upd1 = (lane > j + 1) & (lane < w)
                w1c = np.where(upd1, (np.float64(tau1) * vta1).astype(np.float32), f32(0))
                gram[:, j] = np.where(lane < j, vta0, 0.0)
                gram[:, j + 1] = np.where(lane < j, vta1, np.where(lane == j, np.float64(v01) + s0 * s1 * (pjn - al * pjj), 0.0))
                taus[j] = tau0; taus[j + 1] = tau1
                fs1 = f32(s1)
                store = (lane >= j) & (lane < w)
                pend0 = np.where(lane == j, b0, arow - w0c)
                pend1 = np.where(lane == j + 1, b1r, np.where(lane == j, v01, b1 - w1c))
                sp = min(j + 2, NB - 1); sq = min(j + 3, NB - 1)
                def rowfun(l):
                    row = s[l]
                    x = row[j]; y = row[j + 1]; a = row.copy()
                    v0 = f32(x * fs0)
                    v1 = f32(fmaf(-v0, w0n, y) * fs1)
                    a2 = fmaf(-v1, w1c, fmaf(-v0, w0c, a))
                    o = np.where(lane == j, v0, np.where(lane == j + 1, v1, a2)).astype(np.float32)
                    s[l] = np.where(store, o, row)
                    return o
                P, Q = emulate_pass(j + 2, rows, rowfun, sp, sq, j + 3, 4)
                s[j] = np.where(store, pend0, s[j]); s[j + 1] = np.where(store, pend1, s[j + 1])
                stats['two'] += 1
                j += 2
                continue
        stats['one'] += 1
        tl = sl; tr = sj
        tiny = tr < TINY
        if tiny:
            stats['tiny'] += 1
            tl = np.zeros(NB)
            for l in range(j + 1, rows):
                tl += np.float64(s[l, j]) * s[l].astype(np.float64)
            tr = tl[j]
        beta, tau, scale = make_reflector(alpha, tr) if tiny else scaled_reflector(alpha, tr)
        vta = arow.astype(np.float64) + scale * tl
        wc = np.where((lane > j) & (lane < w) & (tau != 0), (np.float64(tau) * vta).astype(np.float32), f32(0))
        gram[:, j] = np.where(lane < j, vta, 0.0); taus[j] = tau
        store = (lane >= j) & (lane < w)
        pend0 = np.where(lane == j, beta, arow - wc)
        fast = abs(scale) < 1e30
        fs = f32(scale) if tau != 0 else f32(1)
        sp = min(j + 1, NB - 1); sq = min(j + 2, NB - 1)
        def rowfun1(l):
            row = s[l]; x = row[j]
            v = f32(x * fs) if (fast or tau == 0) else f32(np.float64(x) * scale)
            if tau == 0: v = f32(x * f32(1))
            o = np.where(lane == j, v, fmaf(-v, wc, row)).astype(np.float32)
            s[l] = np.where(store, o, row)
            return o
        P, Q = emulate_pass(j + 1, rows, rowfun1, sp, sq, j + 2, 4)
        if tau != 0:
            s[j] = np.where(store, pend0, s[j])
        j += 1
    return s[:, :w], taus[:w], gram

def check(A, seedname):
    m, w = A.shape
    stats = {'one': 0, 'two': 0, 'tiny': 0}
    # the kernel scales the panel by a power of two first
    amax = np.abs(A).max()
    ex = np.frexp(np.float32(amax))[1] if amax > 0 else 0
    As = np.ldexp(A, -ex).astype(np.float32)
    R_V, taus, gram = panel(As, w, stats)
    # Q from reflectors
    Qm = np.eye(m)
    for k in range(w - 1, -1, -1):
        v = np.zeros(m); v[k] = 1; v[k + 1:] = R_V[k + 1:, k]
        Qm = Qm - taus[k] * np.outer(v, v @ Qm)
    R = np.triu(R_V.astype(np.float64))
    rec = Qm[:, :w] @ R[:w, :]
    eps = np.finfo(np.float32).eps
    sfr = np.linalg.norm(rec - As) / (np.linalg.norm(As) * m * eps)
    orth = np.linalg.norm(Qm.T @ Qm - np.eye(m)) / (m * eps)
    # T check: gram upper part vs V^T V
    V = np.tril(R_V.astype(np.float64), -1); V[np.arange(w), np.arange(w)] = 1
    G = V.T @ V
    gerr = max(abs(gram[c, r] - G[c, r]) for r in range(w) for c in range(r)) if w > 1 else 0
    print(f"{seedname:28s} m={m:4d} w={w:2d} sfr={sfr:.3f} orth={orth:.3f} gram_err={gerr:.2e} steps {stats}")
    return sfr, orth

rng = np.random.default_rng(1)
worst = [0, 0]
for m, w in [(176, 32), (144, 32), (64, 32), (33, 32), (32, 32), (40, 7), (512, 32), (35, 31)]:
    cases = {
        'dense': rng.standard_normal((m, w)),
        'collinear': (lambda B: B + 1e-4 * rng.standard_normal((m, w)))(np.repeat(rng.standard_normal((m, 1)), w, axis=1)),
        'rankdef': np.concatenate([rng.standard_normal((m, w // 2)), np.zeros((m, w - w // 2))], axis=1),
        'rowscale': rng.standard_normal((m, w)) * np.logspace(-4, 0, m)[:, None],
        'tiny': rng.standard_normal((m, w)) * 1e-30,
        'dominant_sub': np.tril(rng.standard_normal((m, w))) * 1e3 + rng.standard_normal((m, w)),
        'rank1': np.outer(rng.standard_normal(m), rng.standard_normal(w)),
    }
    for name, A in cases.items():
        sfr, orth = check(A.astype(np.float32), name)
        worst = [max(worst[0], sfr), max(worst[1], orth)]
print("worst", worst)
