"""qr_rs on numpy arrays: the float64 gate on every qr_v2 distribution,
agreement with LAPACK (numpy's sgeqrf; scipy's sorgqr and sormqr where
scipy is installed), batch shapes, empty batches, non-finite matrices and
non-contiguous inputs."""

import threading

import numpy as np
import pytest

import qr_rs
from qr_reference import (
    BAR_ORTH,
    BAR_Q,
    BAR_SFR,
    CASES,
    apply_err,
    generate,
    geqrf_gate,
    orth,
    q64,
    qerr,
    recon,
)

# (case, cond) as the design's test set pairs them, at an order the CPU
# engine runs unblocked (48) and one that takes its blocked paths with a
# ragged last panel (130).
DISTRIBUTIONS = [(c, 0.0) for c in CASES if c not in ("dense", "mixed")] + [
    ("dense", 1.0),
    ("dense", 4.0),
    ("mixed", 2.0),
]
SIZES = [(6, 48), (3, 130)]
SIDES = [(True, False), (True, True), (False, False), (False, True)]


def ids(p):
    return f"{p[0]}-{p[1]:g}" if isinstance(p[1], float) else f"{p[0]}x{p[1]}"


@pytest.fixture(params=DISTRIBUTIONS, ids=ids)
def distribution(request):
    return request.param


@pytest.fixture(params=SIZES, ids=ids)
def inputs(request, distribution):
    case, cond = distribution
    batch, n = request.param
    return generate(case, batch, n, cond, seed=batch * 1000 + n)


def test_geqrf_meets_the_bar(inputs):
    h, tau, info = qr_rs.geqrf(inputs, return_info=True)
    assert h.dtype == np.float32 and tau.dtype == np.float32 and info.dtype == np.int32
    assert h.shape == inputs.shape and tau.shape == inputs.shape[:-1]
    assert (info == 0).all()
    sfr, orth_ = geqrf_gate(inputs, h, tau)
    assert sfr.max() <= BAR_SFR, sfr
    assert orth_.max() <= BAR_ORTH, orth_
    assert ((tau >= 0) & (tau <= 2)).all()


def test_householder_product_meets_the_bar(inputs):
    h, tau = qr_rs.geqrf(inputs)
    q, info = qr_rs.householder_product(h, tau, return_info=True)
    assert q.shape == inputs.shape and (info == 0).all()
    assert qerr(q, h, tau).max() <= BAR_Q
    assert orth(q).max() <= BAR_ORTH


@pytest.mark.parametrize("left,transpose", SIDES)
def test_ormqr_meets_the_bar(inputs, left, transpose):
    h, tau = qr_rs.geqrf(inputs)
    b, n, _ = inputs.shape
    k = 5
    c = np.random.default_rng(n).standard_normal((b, n, k) if left else (b, k, n)).astype(np.float32)
    out, info = qr_rs.ormqr(h, tau, c, left=left, transpose=transpose, return_info=True)
    assert out.shape == c.shape and (info == 0).all()
    assert apply_err(out, h, tau, c, left, transpose).max() <= BAR_Q


def test_qr_meets_the_bar_and_splits_into_geqrf_and_orgqr(inputs):
    q, r, info = qr_rs.qr(inputs, return_info=True)
    assert (info == 0).all()
    assert recon(inputs, q, r).max() <= BAR_Q
    assert orth(q).max() <= BAR_ORTH
    h, tau = qr_rs.geqrf(inputs)
    # Bit for bit the two calls in a row, as the contract says.
    np.testing.assert_array_equal(r, np.triu(h))
    np.testing.assert_array_equal(q, qr_rs.householder_product(h, tau))
    assert qerr(q, h, tau).max() <= BAR_Q


# --- against LAPACK --------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 17, 64, 130])
def test_geqrf_matches_numpys_lapack(n):
    # Well-conditioned inputs, where the factorization is well determined;
    # numpy's mode="raw" returns sgeqrf's H transposed (Fortran order).
    a = generate("dense", 4, n, 1.0, seed=n)
    h, tau = qr_rs.geqrf(a)
    h_ref, tau_ref = np.linalg.qr(a, mode="raw")
    h_ref = np.swapaxes(h_ref, -1, -2)
    scale = np.abs(a).max()
    np.testing.assert_allclose(h, h_ref, rtol=0, atol=2e-3 * scale)
    np.testing.assert_allclose(tau, tau_ref, rtol=0, atol=2e-3)


def test_qr_matches_numpy():
    a = generate("dense", 4, 96, 1.0, seed=7)
    q, r = qr_rs.qr(a)
    q_ref, r_ref = np.linalg.qr(a)
    np.testing.assert_allclose(q, q_ref, rtol=0, atol=2e-3)
    np.testing.assert_allclose(r, r_ref, rtol=0, atol=2e-3 * np.abs(a).max())


@pytest.fixture
def lapack():
    scipy_lapack = pytest.importorskip(
        "scipy.linalg.lapack", reason="scipy is not installed: no sorgqr/sormqr peer"
    )
    return scipy_lapack


@pytest.mark.parametrize("case", ["dense", "rankdef", "clustered", "nearcollinear"])
def test_householder_product_matches_sorgqr(lapack, case):
    a = generate(case, 3, 70, 1.0, seed=3)
    h, tau = qr_rs.geqrf(a)
    q = qr_rs.householder_product(h, tau)
    for b in range(a.shape[0]):
        # The same reflectors: sorgqr's product is forward-stable, so the
        # two agree to rounding whatever the input's conditioning.
        q_ref, _, info = lapack.sorgqr(np.asfortranarray(h[b]), tau[b])
        assert info == 0
        np.testing.assert_allclose(q[b], q_ref, rtol=0, atol=5e-5)


@pytest.mark.parametrize("left,transpose", SIDES)
def test_ormqr_matches_sormqr(lapack, left, transpose):
    a = generate("dense", 2, 70, 1.0, seed=5)
    h, tau = qr_rs.geqrf(a)
    c = np.random.default_rng(1).standard_normal((2, 70, 9) if left else (2, 9, 70))
    c = c.astype(np.float32)
    out = qr_rs.ormqr(h, tau, c, left=left, transpose=transpose)
    for b in range(2):
        ref, _, info = lapack.sormqr(
            "L" if left else "R",
            "T" if transpose else "N",
            np.asfortranarray(h[b]),
            tau[b],
            np.asfortranarray(c[b]),
            lwork=max(1, 64 * 70),
        )
        assert info == 0
        np.testing.assert_allclose(out[b], ref, rtol=0, atol=1e-4 * np.abs(c[b]).max())


# --- shapes -----------------------------------------------------------------


@pytest.mark.parametrize("batch", [(), (5,), (2, 3)], ids=["nxn", "bxnxn", "b1xb2xnxn"])
def test_batch_shapes(batch):
    n = 20
    a = generate("dense", int(np.prod(batch, dtype=int)), n, 1.0, seed=11).reshape(*batch, n, n)
    flat = a.reshape(-1, n, n)
    h, tau, info = qr_rs.geqrf(a, return_info=True)
    assert h.shape == (*batch, n, n) and tau.shape == (*batch, n) and info.shape == batch
    h_flat, tau_flat = qr_rs.geqrf(flat)
    np.testing.assert_array_equal(h.reshape(-1, n, n), h_flat)
    np.testing.assert_array_equal(tau.reshape(-1, n), tau_flat)

    q, info = qr_rs.householder_product(h, tau, return_info=True)
    assert q.shape == (*batch, n, n) and info.shape == batch
    np.testing.assert_array_equal(q.reshape(-1, n, n), qr_rs.householder_product(h_flat, tau_flat))

    c = a[..., :7]
    out = qr_rs.ormqr(h, tau, c, transpose=True)
    assert out.shape == (*batch, n, 7)
    # Q^T A = R: its first columns are R's.
    np.testing.assert_allclose(out, np.triu(h)[..., :7], rtol=0, atol=1e-4 * np.abs(a).max())

    q2, r, info = qr_rs.qr(a, return_info=True)
    assert q2.shape == r.shape == (*batch, n, n) and info.shape == batch
    np.testing.assert_array_equal(q2, q)


@pytest.mark.parametrize("shape", [(0, 4, 4), (3, 0, 0), (0, 0, 0), (2, 0, 5, 5), (0, 0)])
def test_empty_batches_and_order_zero(shape):
    a = np.zeros(shape, dtype=np.float32)
    batch = shape[:-2]
    n = shape[-1]
    h, tau, info = qr_rs.geqrf(a, return_info=True)
    assert h.shape == shape and tau.shape == (*batch, n) and info.shape == batch
    q, info = qr_rs.householder_product(h, tau, return_info=True)
    assert q.shape == shape and info.shape == batch
    for left in (True, False):
        c = np.zeros((*batch, n, 3) if left else (*batch, 3, n), dtype=np.float32)
        out = qr_rs.ormqr(h, tau, c, left=left)
        assert out.shape == c.shape
    q, r, info = qr_rs.qr(a, return_info=True)
    assert q.shape == r.shape == shape and info.shape == batch


def test_ormqr_with_no_columns():
    a = generate("dense", 2, 8, 1.0)
    h, tau = qr_rs.geqrf(a)
    assert qr_rs.ormqr(h, tau, np.zeros((2, 8, 0), np.float32)).shape == (2, 8, 0)
    assert qr_rs.ormqr(h, tau, np.zeros((2, 0, 8), np.float32), left=False).shape == (2, 0, 8)


def test_short_tau_is_a_product_of_the_first_reflectors():
    # torch's householder_product and ormqr take tau of length k <= n: the
    # product of the first k reflectors; the columns after k are not read.
    a = generate("dense", 2, 12, 1.0, seed=2)
    h, tau = qr_rs.geqrf(a)
    k = 5
    h_junk = h.copy()
    h_junk[:, :, k:] = np.nan  # below the diagonal, unread with k = 5
    q = qr_rs.householder_product(h_junk, tau[:, :k])
    tau_padded = np.concatenate([tau[:, :k], np.zeros((2, 12 - k), np.float32)], axis=1)
    h_zeroed = np.tril(h, -1)
    h_zeroed[:, :, k:] = 0.0
    np.testing.assert_allclose(q, q64(h_zeroed, tau_padded), rtol=0, atol=1e-5)
    c = a[:, :, :3]
    out = qr_rs.ormqr(h_junk, tau[:, :k], c, transpose=True)
    np.testing.assert_allclose(
        out, np.swapaxes(q64(h_zeroed, tau_padded), -1, -2) @ c, rtol=0, atol=1e-4
    )
    # k = 0: Q = I.
    np.testing.assert_array_equal(
        qr_rs.householder_product(h, tau[:, :0]), np.broadcast_to(np.eye(12), (2, 12, 12))
    )


# --- non-finite and overflowing matrices -----------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_matrix_is_reported_and_spares_the_others(bad):
    a = generate("dense", 4, 40, 1.0, seed=4)
    a_bad = a.copy()
    a_bad[2, 7, 3] = bad
    h, tau, info = qr_rs.geqrf(a_bad, return_info=True)
    np.testing.assert_array_equal(info, [0, 0, 1, 0])
    assert np.isnan(h[2]).all() and np.isnan(tau[2]).all()
    h_ok, tau_ok = qr_rs.geqrf(a[[0, 1, 3]])
    np.testing.assert_array_equal(h[[0, 1, 3]], h_ok)
    np.testing.assert_array_equal(tau[[0, 1, 3]], tau_ok)

    q, r, info = qr_rs.qr(a_bad, return_info=True)
    np.testing.assert_array_equal(info, [0, 0, 1, 0])
    assert np.isnan(q[2]).all() and np.isnan(r[2]).all()
    assert np.isfinite(q[[0, 1, 3]]).all()

    q, info = qr_rs.householder_product(h, tau, return_info=True)
    np.testing.assert_array_equal(info, [0, 0, 1, 0])
    assert np.isnan(q[2]).all() and np.isfinite(q[[0, 1, 3]]).all()

    out, info = qr_rs.ormqr(h, tau, a, return_info=True)
    np.testing.assert_array_equal(info, [0, 0, 1, 0])
    assert np.isnan(out[2]).all() and np.isfinite(out[[0, 1, 3]]).all()


def test_an_r_beyond_float32_is_info_2():
    big = np.finfo(np.float32).max
    a = np.array([[[big, 1.0], [big, 1.0]], [[2.0, 1.0], [1.0, 3.0]]], dtype=np.float32)
    h, tau, info = qr_rs.geqrf(a, return_info=True)
    np.testing.assert_array_equal(info, [2, 0])
    assert np.isnan(h[0]).all() and np.isfinite(h[1]).all()


def test_extreme_but_representable_scales_factor():
    a = generate("dense", 2, 16, 1.0, seed=9)
    for scale in (1e-30, 1e30):
        s = (a * np.float32(scale)).astype(np.float32)
        h, tau, info = qr_rs.geqrf(s, return_info=True)
        assert (info == 0).all()
        sfr, orth_ = geqrf_gate(s, h, tau)
        assert sfr.max() <= BAR_SFR and orth_.max() <= BAR_ORTH


# --- layouts ----------------------------------------------------------------


def test_non_contiguous_inputs_are_copied_not_written():
    base = generate("dense", 3, 24, 1.0, seed=6)
    want_h, want_tau = qr_rs.geqrf(np.ascontiguousarray(np.swapaxes(base, -1, -2)))
    views = {
        "transposed": np.swapaxes(base, -1, -2),
        "fortran": np.asfortranarray(np.swapaxes(base, -1, -2)),
    }
    for name, view in views.items():
        before = view.copy()
        h, tau = qr_rs.geqrf(view)
        np.testing.assert_array_equal(h, want_h, err_msg=name)
        np.testing.assert_array_equal(tau, want_tau, err_msg=name)
        np.testing.assert_array_equal(view, before, err_msg=name)

    wide = generate("dense", 2, 30, 1.0, seed=8)
    for name, view in {
        "strided": wide[:, ::2, ::2],
        "reversed": wide[::-1, ::-1, :],
        "offset": wide[:, 5:20, 10:25],
    }.items():
        h, tau = qr_rs.geqrf(view)
        h_ref, tau_ref = qr_rs.geqrf(np.ascontiguousarray(view))
        np.testing.assert_array_equal(h, h_ref, err_msg=name)
        np.testing.assert_array_equal(tau, tau_ref, err_msg=name)

    one = generate("dense", 1, 10, 1.0, seed=1)[0]
    broadcast = np.broadcast_to(one, (4, 10, 10))  # zero batch stride, read-only
    q, r = qr_rs.qr(broadcast)
    q1, r1 = qr_rs.qr(one)
    for b in range(4):
        np.testing.assert_array_equal(q[b], q1)
        np.testing.assert_array_equal(r[b], r1)


def test_read_only_and_byte_swapped_inputs():
    a = generate("dense", 2, 9, 1.0, seed=3)
    ref = qr_rs.geqrf(a)
    ro = a.copy()
    ro.flags.writeable = False
    np.testing.assert_array_equal(qr_rs.geqrf(ro).a, ref.a)
    swapped = a.astype(a.dtype.newbyteorder(">"))
    np.testing.assert_array_equal(qr_rs.geqrf(swapped).a, ref.a)


def test_results_are_writable_arrays_owned_by_numpy():
    a = generate("dense", 2, 6, 1.0)
    q, r = qr_rs.qr(a)
    assert isinstance(q, np.ndarray) and q.flags.writeable and q.flags.c_contiguous
    q[...] = 0.0  # the caller owns the result
    assert qr_rs.qr(a).Q.any()


def test_result_names_follow_torch():
    a = generate("dense", 1, 4, 1.0)
    f = qr_rs.geqrf(a)
    assert f.a is f[0] and f.tau is f[1]
    res = qr_rs.qr(a)
    assert res.Q is res[0] and res.R is res[1]
    assert qr_rs.qr(a, return_info=True).info.shape == (1,)
    r_only = qr_rs.qr(a, mode="r")
    assert r_only.Q.shape == (0,)
    np.testing.assert_array_equal(r_only.R, res.R)
    assert qr_rs.orgqr is qr_rs.householder_product


# --- threads ----------------------------------------------------------------


def test_concurrent_calls_from_python_threads_agree():
    inputs = [generate("dense", 4, 64, 1.0, seed=s) for s in range(6)]
    expected = [qr_rs.qr(a) for a in inputs]
    results = [None] * len(inputs)

    def work(i):
        for _ in range(3):
            results[i] = qr_rs.qr(inputs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(results, expected):
        np.testing.assert_array_equal(got.Q, want.Q)
        np.testing.assert_array_equal(got.R, want.R)


def test_the_gil_is_released_while_computing():
    a = generate("dense", 12, 384, 1.0, seed=1)
    done = threading.Event()

    def work():
        qr_rs.qr(a)
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    spins = 0
    while not done.is_set():
        spins += 1
    worker.join()
    # With the GIL held through the computation this thread would get the
    # interpreter only between the copy and the return: a handful of spins.
    assert spins > 10_000, spins
