"""qr_rs against torch.geqrf, torch.linalg.householder_product, torch.ormqr
and torch.linalg.qr on CPU tensors. Skipped, with the reason shown, where
torch is not installed (CI installs numpy only: torch is too large)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: no torch comparisons")

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


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def np_(x):
    return x.detach().cpu().numpy()


@pytest.mark.parametrize("n", [1, 5, 48, 130])
def test_geqrf_matches_torch_geqrf(n):
    a = t(generate("dense", 4, n, 1.0, seed=n))
    h, tau = qr_rs.geqrf(a)
    assert isinstance(h, torch.Tensor) and h.dtype == torch.float32 and h.device == a.device
    h_ref, tau_ref = torch.geqrf(a)
    scale = a.abs().max().item()
    torch.testing.assert_close(h, h_ref, rtol=0, atol=2e-3 * scale)
    torch.testing.assert_close(tau, tau_ref, rtol=0, atol=2e-3)


@pytest.mark.parametrize("case", CASES)
def test_every_distribution_against_torch(case):
    cond = {"dense": 2.0, "mixed": 2.0}.get(case, 0.0)
    a_np = generate(case, 4, 96, cond, seed=3)
    a = t(a_np)
    # geqrf: the gate (a factorization of an ill-conditioned matrix is not
    # unique to rounding, so the comparison with torch's is by the gate).
    h, tau = qr_rs.geqrf(a)
    sfr, orth_ = geqrf_gate(a_np, np_(h), np_(tau))
    assert sfr.max() <= BAR_SFR and orth_.max() <= BAR_ORTH
    h_t, tau_t = torch.geqrf(a)
    sfr_t, _ = geqrf_gate(a_np, np_(h_t), np_(tau_t))
    assert sfr.max() <= max(BAR_SFR, 2 * sfr_t.max())
    # The Q operations from the same reflectors: forward-stable products,
    # which agree with torch's to rounding on every distribution.
    q = qr_rs.householder_product(h, tau)
    q_t = torch.linalg.householder_product(h, tau)
    torch.testing.assert_close(q, q_t, rtol=0, atol=5e-5)
    assert qerr(np_(q), np_(h), np_(tau)).max() <= BAR_Q
    c = t(np.random.default_rng(0).standard_normal((4, 96, 8)).astype(np.float32))
    for left, transpose in SIDES:
        cc = c if left else c.transpose(-1, -2).contiguous()
        out = qr_rs.ormqr(h, tau, cc, left=left, transpose=transpose)
        ref = torch.ormqr(h, tau, cc, left=left, transpose=transpose)
        torch.testing.assert_close(out, ref, rtol=0, atol=1e-4 * cc.abs().max().item())
        assert apply_err(np_(out), np_(h), np_(tau), np_(cc), left, transpose).max() <= BAR_Q
    qq, r = qr_rs.qr(a)
    assert recon(a_np, np_(qq), np_(r)).max() <= BAR_Q and orth(np_(qq)).max() <= BAR_ORTH


def test_qr_matches_torch_linalg_qr():
    a = t(generate("dense", 8, 64, 1.0, seed=5))
    q, r = qr_rs.qr(a)
    q_ref, r_ref = torch.linalg.qr(a)
    torch.testing.assert_close(q, q_ref, rtol=0, atol=2e-3)
    torch.testing.assert_close(r, r_ref, rtol=0, atol=2e-3 * a.abs().max().item())
    assert qr_rs.qr(a).Q is not None  # SOAP's torch.linalg.qr(X).Q


def test_short_tau_matches_torch():
    a = t(generate("dense", 3, 10, 1.0, seed=1))
    h, tau = torch.geqrf(a)
    torch.testing.assert_close(
        qr_rs.householder_product(h, tau[:, :4]),
        torch.linalg.householder_product(h, tau[:, :4]),
        rtol=0,
        atol=5e-5,
    )


@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_torch_batch_shapes_and_info(batch):
    a = t(generate("dense", int(np.prod(batch, dtype=int)), 12, 1.0).reshape(*batch, 12, 12))
    q, r, info = qr_rs.qr(a, return_info=True)
    assert q.shape == a.shape and info.shape == batch and info.dtype == torch.int32
    assert isinstance(info, torch.Tensor) and (info == 0).all()


def test_non_contiguous_torch_inputs():
    a = t(generate("dense", 2, 16, 1.0))
    v = a.transpose(-1, -2)
    assert not v.is_contiguous()
    h, tau = qr_rs.geqrf(v)
    h_ref, tau_ref = qr_rs.geqrf(v.contiguous())
    torch.testing.assert_close(h, h_ref, rtol=0, atol=0)
    torch.testing.assert_close(tau, tau_ref, rtol=0, atol=0)


def test_autograd_is_refused_while_recording():
    a = t(generate("dense", 2, 6, 1.0)).requires_grad_()
    with pytest.raises(RuntimeError, match="autograd"):
        qr_rs.qr(a)
    with torch.no_grad():
        q, r = qr_rs.qr(a)
    assert not q.requires_grad
    q2, _ = qr_rs.qr(a.detach())
    torch.testing.assert_close(q, q2, rtol=0, atol=0)


def test_wrong_torch_dtype():
    with pytest.raises(TypeError, match=r"dtype float64 .*float32"):
        qr_rs.qr(torch.eye(3, dtype=torch.float64))
    with pytest.raises(TypeError, match=r"dtype bfloat16 .*float32"):
        qr_rs.qr(torch.eye(3, dtype=torch.bfloat16))


def test_torch_nan_in_one_matrix():
    a = t(generate("dense", 3, 8, 1.0))
    a[1, 2, 2] = float("nan")
    q, r, info = qr_rs.qr(a, return_info=True)
    assert info.tolist() == [0, 1, 0]
    assert torch.isnan(q[1]).all() and torch.isfinite(q[[0, 2]]).all()


def test_a_training_step_swaps_linalg_qr():
    # The README's example: a Shampoo-style eigenbasis refresh, Q of
    # (statistics @ basis). Such products are ill-conditioned, so the two Q
    # are compared by the gate, not entry by entry.
    torch.manual_seed(0)
    grads = torch.randn(4, 32, 32)
    stats = grads @ grads.transpose(-1, -2) + 1e-3 * torch.eye(32)
    basis = torch.linalg.qr(torch.randn(4, 32, 32)).Q
    x = stats @ basis
    with torch.no_grad():
        want = torch.linalg.qr(x)
        got = qr_rs.qr(x)
    assert isinstance(got.Q, torch.Tensor) and got.Q.shape == want.Q.shape
    assert recon(np_(x), np_(got.Q), np_(got.R)).max() <= BAR_Q
    assert orth(np_(got.Q)).max() <= BAR_ORTH
    # The leading columns are well determined: the same to rounding.
    torch.testing.assert_close(got.Q[..., :4], want.Q[..., :4], rtol=0, atol=1e-3)
