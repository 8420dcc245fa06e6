"""GPU tensors. This build has no GPU path: a CUDA tensor is refused with
NotImplementedError before anything is exported or synchronized. Skipped,
with the reason shown, where no CUDA device is present."""

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

CALLS = {
    "geqrf": lambda a: qr_rs.geqrf(a),
    "qr": lambda a: qr_rs.qr(a),
    "householder_product": lambda a: qr_rs.householder_product(a, a[..., 0]),
    "ormqr": lambda a: qr_rs.ormqr(a, a[..., 0], a),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_cuda_tensors_are_not_supported_by_this_build(name):
    a = torch.eye(4, device="cuda").expand(2, 4, 4).contiguous()
    with pytest.raises(NotImplementedError, match="GPU tensors are not supported"):
        CALLS[name](a)


def test_a_cuda_tensor_among_cpu_ones_is_refused():
    h = torch.eye(4).expand(2, 4, 4).contiguous()
    with pytest.raises(NotImplementedError, match="tau: GPU tensors"):
        qr_rs.householder_product(h, torch.zeros(2, 4, device="cuda"))
