"""Every misuse is a Python exception that says what was wrong; none
crashes the interpreter."""

import re

import numpy as np
import pytest

import qr_rs

F32 = np.float32


def square(*shape):
    return np.ones(shape, dtype=F32) + np.eye(shape[-1], dtype=F32)


@pytest.mark.parametrize(
    "dtype", ["float64", "float16", "int32", "int64", "uint8", "complex64", "bool"]
)
def test_wrong_dtype_is_a_type_error_naming_it(dtype):
    a = np.ones((2, 3, 3), dtype=dtype)
    for call in (
        lambda: qr_rs.geqrf(a),
        lambda: qr_rs.qr(a),
        lambda: qr_rs.householder_product(a, np.ones((2, 3), F32)),
        lambda: qr_rs.householder_product(square(2, 3, 3), np.ones((2, 3), dtype)),
        lambda: qr_rs.ormqr(square(2, 3, 3), np.ones((2, 3), F32), a),
    ):
        with pytest.raises(TypeError, match=rf"dtype {dtype} .*float32"):
            call()


def test_object_arrays_and_non_tensors_are_type_errors():
    with pytest.raises(TypeError, match="float32"):
        qr_rs.qr(np.empty((2, 2), dtype=object))
    for bad in ([[1.0, 0.0], [0.0, 1.0]], 3.0, None, "A"):
        with pytest.raises(TypeError, match="DLPack"):
            qr_rs.qr(bad)


@pytest.mark.parametrize("shape", [(), (4,), (3, 4), (2, 4, 3), (1, 2, 3, 5)])
def test_non_square_or_rank_below_two_is_a_value_error_with_the_shape(shape):
    a = np.ones(shape, dtype=F32)
    want = re.escape(str(tuple(shape)))
    for call in (qr_rs.geqrf, qr_rs.qr):
        with pytest.raises(ValueError, match=want):
            call(a)
    with pytest.raises(ValueError, match=want):
        qr_rs.householder_product(a, np.ones(shape[:-1], F32))
    with pytest.raises(ValueError, match=want):
        qr_rs.ormqr(a, np.ones(shape[:-1], F32), a)


@pytest.mark.parametrize(
    "tau_shape", [(3, 5), (2, 6), (2,), (2, 1, 5), (5,)], ids=lambda s: str(s)
)
def test_tau_that_does_not_match_h_is_a_value_error(tau_shape):
    h = square(2, 5, 5)
    tau = np.zeros(tau_shape, F32)
    with pytest.raises(ValueError, match=r"tau: .*" + re.escape(str(tau_shape))):
        qr_rs.householder_product(h, tau)
    with pytest.raises(ValueError, match=r"tau: "):
        qr_rs.ormqr(h, tau, np.zeros((2, 5, 2), F32))


@pytest.mark.parametrize(
    "c_shape,left",
    [
        ((2, 4, 3), True),  # rows must be n = 5 on the left
        ((2, 3, 4), False),  # columns must be n = 5 on the right
        ((2, 3, 5), True),
        ((3, 5, 2), True),  # batch mismatch
        ((5, 2), True),  # batch missing
        ((1, 2, 5, 2), True),  # extra batch axis
        ((5,), True),
    ],
)
def test_c_that_does_not_match_h_is_a_value_error(c_shape, left):
    h = square(2, 5, 5)
    tau = np.zeros((2, 5), F32)
    with pytest.raises(ValueError, match=r"C: .*" + re.escape(str(c_shape))):
        qr_rs.ormqr(h, tau, np.zeros(c_shape, F32), left=left)


def test_bad_qr_mode():
    with pytest.raises(ValueError, match="mode"):
        qr_rs.qr(square(2, 2), mode="full")


def test_a_non_cpu_producer_is_refused_by_device():
    class OnCuda:
        def __dlpack_device__(self):
            return (2, 0)  # kDLCUDA

        def __dlpack__(self, **kwargs):
            raise AssertionError("must be refused before exporting")

    # The CUDA path writes into arrays that torch or CuPy allocate.
    with pytest.raises(NotImplementedError, match="CUDA arrays of .* are not supported"):
        qr_rs.qr(OnCuda())
    # A CUDA tensor handed to the CPU functions directly.
    from qr_rs import _native

    with pytest.raises(ValueError, match="reached the CPU path"):
        _native.geqrf(OnCuda())
    # A CUDA tensor among CPU ones.
    with pytest.raises(ValueError, match="H is on the CPU while tau is on CUDA device 0"):
        qr_rs.householder_product(square(2, 3, 3), OnCuda())

    class OnMetal(OnCuda):
        def __dlpack_device__(self):
            return (8, 0)

    with pytest.raises(ValueError, match="only CPU tensors"):
        qr_rs.geqrf(OnMetal())


def test_cuda_tensors_of_two_devices_are_refused_before_any_export():
    class OnCuda:
        def __init__(self, device):
            self.device = device

        def __dlpack_device__(self):
            return (2, self.device)

        def __dlpack__(self, **kwargs):
            raise AssertionError("must be refused before exporting")

    with pytest.raises(ValueError, match="tau is on CUDA device 1 while H is on CUDA device 0"):
        qr_rs.householder_product(OnCuda(0), OnCuda(1))
    with pytest.raises(ValueError, match="C is on the CPU while H is on CUDA device 0"):
        qr_rs.ormqr(OnCuda(0), OnCuda(0), square(2, 3, 3))


def test_a_producer_that_raises_propagates_its_error():
    class Broken:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, **kwargs):
            raise RuntimeError("producer failed")

    with pytest.raises(RuntimeError, match="producer failed"):
        qr_rs.qr(Broken())


def test_a_result_is_exported_once():
    # The results are one-shot DLPack producers that the wrapper hands to
    # numpy; a second export is a BufferError, never a second owner.
    from qr_rs import _native

    h, tau, info = _native.geqrf(square(2, 3, 3))
    first = np.from_dlpack(h)
    assert first.shape == (2, 3, 3)
    with pytest.raises(BufferError, match="already"):
        np.from_dlpack(h)


def test_empty_tensors_with_huge_batch_dimensions():
    # Zero elements, whatever the other dimensions: an empty result.
    q, r, info = qr_rs.qr(np.empty((0, 2**40, 0, 0), F32), return_info=True)
    assert q.shape == (0, 2**40, 0, 0) and info.shape == (0, 2**40)
