"""Inputs and float64 gates for the qr_rs tests, in numpy alone.

- ``generate``: the ``qr_v2`` distributions of the design brief (section 2),
  seeded, computed in float64 and rounded to float32 once.
- ``q64``: ``Q = H_0 H_1 ... H_{n-1}`` of given reflectors, in float64,
  independent of the code under test.
- The gates of ``qr_core``'s contract, per matrix (``eps = 2^-23``,
  ``||.||_1`` the largest absolute column sum), and the project's bar.
"""

from __future__ import annotations

import numpy as np

EPS = 2.0**-23
#: The project's bar (stricter than the gate): sfr, orth, and the Q
#: operations' errors (qerr, apply, recon).
BAR_SFR = 5.0
BAR_ORTH = 25.0
BAR_Q = 5.0

CASES = (
    "dense",
    "upper",
    "diagonal",
    "rankdef",
    "nearrank",
    "clustered",
    "band",
    "nearcollinear",
    "rowscale",
    "mixed",
)

# The mixed profile's draw: dense six times as likely as each other one.
_MIXED = ("dense",) * 6 + (
    "rankdef",
    "nearrank",
    "clustered",
    "band",
    "rowscale",
    "nearcollinear",
)


def _logspace_down(c: float, n: int) -> np.ndarray:
    return 10.0 ** np.linspace(0.0, -c, n)


def _scale_columns(a: np.ndarray, cond: float) -> np.ndarray:
    return a * _logspace_down(cond, a.shape[-1]) if cond else a


def _profile(case: str, n: int, cond: float, rng: np.random.Generator) -> np.ndarray:
    a = rng.standard_normal((n, n))
    r = min(max(3 * n // 4, 1), n)  # rankdef and nearrank keep r columns
    if case == "dense":
        return _scale_columns(a, cond)
    if case == "upper":
        a = np.triu(a)
        a[np.diag_indices(n)] += np.linspace(1.0, 0.25, n)
        return _scale_columns(a, cond)
    if case == "diagonal":
        signs = rng.choice([-1.0, 1.0], size=n)
        return np.diag(signs * _logspace_down(max(cond, 2.0), n))
    if case == "rankdef":
        a[:, r:] = 0.0
        return _scale_columns(a, cond)
    if case == "nearrank":
        t = n - r
        a[:, r:] = a[:, :t] + 1e-5 * rng.standard_normal((n, t))
        return _scale_columns(a, cond)
    if case == "clustered":
        s = np.ones(n)
        s[n // 2 :] = 4.0 * EPS
        if n >= 8:
            s[n // 2 - 2 : n // 2 + 2] = np.sqrt(EPS)
        return a * s
    if case == "band":
        bw = min(max(n // 32, 2), 32)
        i, j = np.indices((n, n))
        a[np.abs(i - j) > bw] = 0.0
        a[np.diag_indices(n)] += np.linspace(1.0, 0.5, n)
        return _scale_columns(a, cond)
    if case == "nearcollinear":
        base = rng.standard_normal((n, 1))
        return _scale_columns(base + 1e-4 * a, cond)
    if case == "rowscale":
        return a * _logspace_down(max(cond, 4.0), n)[:, None]
    raise ValueError(f"unknown case {case!r}")


def generate(case: str, batch: int, n: int, cond: float, seed: int = 0) -> np.ndarray:
    """``batch`` float32 matrices of order ``n`` drawn from ``case``."""
    rng = np.random.default_rng(seed)
    if case == "mixed":
        profiles = [str(rng.choice(_MIXED)) for _ in range(batch)]
        if batch >= 2:
            # At least one dense matrix and one other, at random positions.
            k, m = rng.choice(batch, size=2, replace=False)
            profiles[k] = "dense"
            if profiles[m] == "dense":
                profiles[m] = str(rng.choice(_MIXED[6:]))
    else:
        profiles = [case] * batch
    out = np.empty((batch, n, n), dtype=np.float32)
    for b, p in enumerate(profiles):
        out[b] = _profile(p, n, cond, rng)
    return out


def norm1(x: np.ndarray) -> np.ndarray:
    """``||x||_1`` of each matrix of a batch (largest absolute column sum);
    NaN propagates."""
    if x.shape[-1] == 0 or x.shape[-2] == 0:
        return np.zeros(x.shape[:-2])
    return np.abs(x).sum(axis=-2).max(axis=-1)


def _scaled(x: np.ndarray, by: np.ndarray) -> np.ndarray:
    x, by = np.broadcast_arrays(np.asarray(x, float), np.asarray(by, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = x / by
    return np.where(by > 0, out, np.where(x == 0, 0.0, np.inf))


def q64(h: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """``Q`` of each ``(H, tau)`` of a ``(b, n, n)`` batch, in float64."""
    h = np.asarray(h, dtype=np.float64)
    tau = np.asarray(tau, dtype=np.float64)
    b, n, _ = h.shape
    q = np.broadcast_to(np.eye(n), (b, n, n)).copy()
    for j in range(n - 1, -1, -1):
        v = h[:, j:, j].copy()
        v[:, 0] = 1.0
        w = np.einsum("bi,bik->bk", v, q[:, j:, :])
        q[:, j:, :] -= tau[:, j, None, None] * v[:, :, None] * w[:, None, :]
    return q


def orth(q: np.ndarray) -> np.ndarray:
    """``||Q^T Q - I||_1 / (n eps)`` per matrix."""
    q = np.asarray(q, dtype=np.float64)
    n = q.shape[-1]
    return _scaled(norm1(np.swapaxes(q, -1, -2) @ q - np.eye(n)), n * EPS)


def geqrf_gate(a: np.ndarray, h: np.ndarray, tau: np.ndarray):
    """``(sfr, orth)`` per matrix of ``geqrf``'s ``(H, tau)`` for ``A``:
    ``||R - Q^T A||_1 / (n eps ||A||_1)`` and ``orth`` of ``Q64``."""
    a = np.asarray(a, dtype=np.float64)
    n = a.shape[-1]
    q = q64(h, tau)
    r = np.triu(np.asarray(h, dtype=np.float64))
    sfr = _scaled(norm1(r - np.swapaxes(q, -1, -2) @ a), n * EPS * norm1(a))
    return sfr, orth(q)


def qerr(q: np.ndarray, h: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """``||Q - Q64||_1 / (n eps)`` per matrix: ``householder_product``'s gate."""
    n = q.shape[-1]
    return _scaled(norm1(np.asarray(q, np.float64) - q64(h, tau)), n * EPS)


def apply_err(
    out: np.ndarray, h: np.ndarray, tau: np.ndarray, c: np.ndarray, left: bool, transpose: bool
) -> np.ndarray:
    """``||op(Q) C - op(Q64) C||_1 / (n eps ||C||_1)`` (or ``C op(Q)``):
    ``ormqr``'s gate."""
    q = q64(h, tau)
    if transpose:
        q = np.swapaxes(q, -1, -2)
    c = np.asarray(c, dtype=np.float64)
    want = q @ c if left else c @ q
    n = h.shape[-1]
    return _scaled(norm1(np.asarray(out, np.float64) - want), n * EPS * norm1(c))


def recon(a: np.ndarray, q: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``||A - Q R||_1 / (n eps ||A||_1)`` per matrix: ``qr``'s gate."""
    a = np.asarray(a, dtype=np.float64)
    n = a.shape[-1]
    qr = np.asarray(q, np.float64) @ np.asarray(r, np.float64)
    return _scaled(norm1(a - qr), n * EPS * norm1(a))
