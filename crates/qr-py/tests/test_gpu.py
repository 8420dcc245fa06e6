"""CUDA tensors: qr_rs's GPU path against torch on the same device, the
float64 gate on every distribution, stream ordering, and misuse. Skipped,
with the reason shown, where torch with a usable CUDA device is absent."""

import threading

import numpy as np
import pytest


def _cuda_torch():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


torch = _cuda_torch()
pytestmark = pytest.mark.skipif(
    torch is None, reason="no CUDA device (torch with a usable CUDA device is not present)"
)

import qr_rs  # noqa: E402
from qr_reference import (  # noqa: E402
    BAR_ORTH,
    BAR_Q,
    BAR_SFR,
    CASES,
    apply_err,
    generate,
    geqrf_gate,
    orth,
    qerr,
    recon,
)

SIDES = [(True, False), (True, True), (False, False), (False, True)]


def cuda(a):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def np_(x):
    return x.detach().cpu().numpy()


def check_qr_ops(a_np, a):
    """Every operation of `a` (a CUDA copy of `a_np`) meets the bar."""
    h, tau = qr_rs.geqrf(a)
    assert h.is_cuda and h.device == a.device and h.dtype == torch.float32
    sfr, orth_ = geqrf_gate(a_np, np_(h), np_(tau))
    assert sfr.max() <= BAR_SFR and orth_.max() <= BAR_ORTH, (sfr.max(), orth_.max())
    q = qr_rs.householder_product(h, tau)
    assert qerr(np_(q), np_(h), np_(tau)).max() <= BAR_Q
    assert orth(np_(q)).max() <= BAR_ORTH
    q2, r = qr_rs.qr(a)
    assert recon(a_np, np_(q2), np_(r)).max() <= BAR_SFR
    # qr is geqrf then orgqr, bit for bit.
    assert torch.equal(q2, q) and torch.equal(r, torch.triu(h))
    n = a_np.shape[-1]
    for left, transpose in SIDES:
        shape = (a_np.shape[0], n, 3) if left else (a_np.shape[0], 3, n)
        c_np = generate("dense", 1, max(shape[1:]), 1.0, seed=n)[0][: shape[1], : shape[2]]
        c_np = np.broadcast_to(c_np, shape).copy()
        out = qr_rs.ormqr(h, tau, cuda(c_np), left=left, transpose=transpose)
        err = apply_err(np_(out), np_(h), np_(tau), c_np, left, transpose)
        assert err.max() <= BAR_Q, (left, transpose, err.max())


@pytest.mark.parametrize("case", CASES)
def test_every_distribution_meets_the_bar(case):
    cond = {"dense": 2.0, "mixed": 2.0}.get(case, 0.0)
    a_np = generate(case, 4, 96, cond, seed=5)
    check_qr_ops(a_np, cuda(a_np))


@pytest.mark.parametrize("batch,n", [(3, 1), (5, 7), (2, 33), (40, 176), (3, 512), (1, 1100)])
def test_shapes_of_every_strategy_meet_the_bar(batch, n):
    a_np = generate("dense", batch, n, 1.0, seed=n)
    check_qr_ops(a_np, cuda(a_np))


@pytest.mark.parametrize("n", [5, 48, 256])
def test_against_torch_on_the_same_device(n):
    a = cuda(generate("dense", 4, n, 1.0, seed=n))
    h, tau = qr_rs.geqrf(a)
    h_t, tau_t = torch.geqrf(a)
    scale = a.abs().max().item()
    torch.testing.assert_close(h, h_t, rtol=0, atol=2e-3 * scale)
    torch.testing.assert_close(tau, tau_t, rtol=0, atol=2e-3)
    q = qr_rs.householder_product(h_t, tau_t)
    torch.testing.assert_close(q, torch.linalg.householder_product(h_t, tau_t), rtol=0, atol=1e-4)
    c = cuda(generate("dense", 4, n, 1.0, seed=n + 1))
    for left, transpose in SIDES:
        torch.testing.assert_close(
            qr_rs.ormqr(h_t, tau_t, c, left, transpose),
            torch.ormqr(h_t, tau_t, c, left, transpose),
            rtol=0,
            atol=1e-4 * c.abs().max().item() * n**0.5,
        )
    q2, r2 = qr_rs.qr(a)
    q_t, r_t = torch.linalg.qr(a)
    # Same signs as geqrf's R, so the factors agree up to rounding.
    torch.testing.assert_close(r2, r_t, rtol=0, atol=2e-3 * scale)
    torch.testing.assert_close(q2, q_t, rtol=0, atol=2e-3)


@pytest.mark.parametrize("dims", [(6, 6), (2, 6, 6), (2, 3, 6, 6), (0, 6, 6), (3, 0, 0)])
def test_batch_shapes(dims):
    a = torch.randn(dims, device="cuda")
    h, tau, info = qr_rs.geqrf(a, return_info=True)
    assert h.shape == a.shape and tau.shape == dims[:-1] and info.shape == dims[:-2]
    assert info.dtype == torch.int32 and bool((info == 0).all())
    q, r = qr_rs.qr(a)
    assert q.shape == a.shape and r.shape == a.shape
    if a.numel():
        torch.testing.assert_close(q @ r, a, rtol=0, atol=1e-4 * a.abs().max().item())
    assert qr_rs.householder_product(h, tau).shape == a.shape


def test_short_tau_is_padded_as_torch_does():
    a = cuda(generate("dense", 3, 20, 1.0, seed=2))
    h, tau = torch.geqrf(a)
    for k in (0, 7):
        torch.testing.assert_close(
            qr_rs.householder_product(h, tau[..., :k]),
            torch.linalg.householder_product(h, tau[..., :k]),
            rtol=0,
            atol=1e-4,
        )
        # torch.ormqr on CUDA takes only a full tau: the product instead.
        c = torch.randn(3, 20, 4, device="cuda")
        torch.testing.assert_close(
            qr_rs.ormqr(h, tau[..., :k], c),
            torch.linalg.householder_product(h, tau[..., :k]) @ c,
            rtol=0,
            atol=1e-4 * 20,
        )


def test_a_non_finite_matrix_leaves_the_others_alone():
    a_np = generate("dense", 4, 64, 1.0, seed=9)
    a_np[2, 5, 7] = np.nan
    a = cuda(a_np)
    h, tau, info = qr_rs.geqrf(a, return_info=True)
    assert np_(info).tolist() == [0, 0, 1, 0]
    keep = [0, 1, 3]
    sfr, _ = geqrf_gate(a_np[keep], np_(h)[keep], np_(tau)[keep])
    assert sfr.max() <= BAR_SFR
    assert torch.isnan(h[2]).all()
    q, r, info_qr = qr_rs.qr(a, return_info=True)
    assert np_(info_qr).tolist() == [0, 0, 1, 0]
    assert torch.isnan(q[2]).all() and torch.isfinite(q[keep]).all()


def test_inputs_are_never_written_and_views_are_accepted():
    base = cuda(generate("dense", 5, 3, 1.0, seed=1))
    before = base.clone()
    # A view starting 36 bytes into its allocation (copied to an aligned
    # buffer), and a transposed one (copied to a contiguous buffer).
    view = base[1:]
    assert view.data_ptr() % 256
    h, tau = qr_rs.geqrf(view)
    h_ref, tau_ref = qr_rs.geqrf(view.clone())
    assert torch.equal(h, h_ref) and torch.equal(tau, tau_ref)
    ht, _ = qr_rs.geqrf(base.transpose(-1, -2))
    h2, _ = qr_rs.geqrf(base.transpose(-1, -2).contiguous())
    assert torch.equal(ht, h2)
    qr_rs.ormqr(h, tau, view)
    assert torch.equal(base, before)


def _slow_write(dst, src):
    """Queues, on the current stream, about 50 ms of spinning, then dst = src."""
    torch.cuda._sleep(100_000_000)
    dst.copy_(src)


@pytest.mark.parametrize("stream_kind", ["side", "default"])
def test_calls_are_ordered_on_the_current_stream(stream_kind):
    a_np = generate("dense", 8, 128, 1.0, seed=4)
    src = cuda(a_np)
    want_h, want_tau = qr_rs.geqrf(src)
    want_q, want_r = qr_rs.qr(src)
    torch.cuda.synchronize()
    s = torch.cuda.Stream() if stream_kind == "side" else torch.cuda.default_stream()
    with torch.cuda.stream(s):
        a = torch.zeros_like(src)
        # Written late on this stream: a call not ordered after it would
        # factor zeros.
        _slow_write(a, src)
        h, tau = qr_rs.geqrf(a)
        # Read right away on this stream: a stream not ordered after the
        # call would copy an unwritten buffer.
        h_copy = h.clone()
        _slow_write(a, torch.zeros_like(src))
        q, r = qr_rs.qr(src * 1.0)
        q_copy = q.clone()
    s.synchronize()
    assert torch.equal(h_copy, want_h) and torch.equal(tau, want_tau)
    assert torch.equal(q_copy, want_q) and torch.equal(r, want_r)


def test_threads_share_the_engine():
    inputs = [cuda(generate("dense", 6, 64 + 8 * i, 1.0, seed=i)) for i in range(6)]
    want = [qr_rs.qr(a) for a in inputs]
    torch.cuda.synchronize()
    got = [None] * len(inputs)
    errors = []

    def work(i):
        try:
            with torch.cuda.stream(torch.cuda.Stream()):
                for _ in range(5):
                    q, r = qr_rs.qr(inputs[i])
                torch.cuda.current_stream().synchronize()
            got[i] = (q, r)
        except Exception as e:  # reported below, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for (q, r), (wq, wr) in zip(got, want):
        assert torch.equal(q, wq) and torch.equal(r, wr)


def test_misuse_is_a_python_error():
    a = torch.randn(2, 4, 4, device="cuda")
    with pytest.raises(TypeError, match="float64 is not supported"):
        qr_rs.geqrf(a.double())
    with pytest.raises(ValueError, match=r"\(\.\.\., n, n\).*\(2, 4, 3\)"):
        qr_rs.qr(a[..., :3])
    with pytest.raises(ValueError, match="H is on CUDA device 0 while tau is on the CPU|"
                       "tau is on the CPU while H is on CUDA device 0"):
        qr_rs.householder_product(a, torch.zeros(2, 4))
    with pytest.raises(ValueError, match="tau: expected shape"):
        qr_rs.householder_product(a, torch.zeros(2, 5, device="cuda"))
    with pytest.raises(ValueError, match="C: with left=True"):
        qr_rs.ormqr(a, torch.zeros(2, 4, device="cuda"), torch.zeros(2, 3, 3, device="cuda"))
    g = a.clone().requires_grad_()
    with pytest.raises(RuntimeError, match="autograd"):
        qr_rs.qr(g)
    with torch.no_grad():
        qr_rs.qr(g)


@pytest.mark.skipif(torch is None or torch.cuda.device_count() < 2, reason="fewer than two CUDA devices")
def test_tensors_on_two_devices_are_refused():
    h = torch.eye(4, device="cuda:0").expand(2, 4, 4).contiguous()
    with pytest.raises(ValueError, match="one device"):
        qr_rs.householder_product(h, torch.zeros(2, 4, device="cuda:1"))


def test_cupy_arrays_run_on_their_stream():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed: no CuPy test")
    a_np = generate("dense", 3, 40, 1.0, seed=6)
    a = cupy.asarray(a_np)
    h, tau = qr_rs.geqrf(a)
    assert isinstance(h, cupy.ndarray)
    sfr, orth_ = geqrf_gate(a_np, cupy.asnumpy(h), cupy.asnumpy(tau))
    assert sfr.max() <= BAR_SFR and orth_.max() <= BAR_ORTH
    q, r = qr_rs.qr(a)
    assert recon(a_np, cupy.asnumpy(q), cupy.asnumpy(r)).max() <= BAR_SFR


def test_backend_names_the_device():
    assert "CUDA engine on device 0" in qr_rs.backend("cuda:0")
    assert "CUDA engine on device 0" in qr_rs.backend(torch.zeros(1, device="cuda"))
