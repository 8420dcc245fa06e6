"""Batched Householder QR of square float32 matrices, as torch computes it.

Drop-in replacements for ``torch.geqrf``, ``torch.linalg.householder_product``,
``torch.ormqr`` and ``torch.linalg.qr`` (mode ``"reduced"``) over batches of
shape ``(..., n, n)``, computed by qr-rs (the exact LAPACK ``geqrf``
convention; every result meets the project's float64 gate).

Inputs are anything with ``__dlpack__``: torch tensors, numpy arrays, or
another framework's CPU arrays. Results come back as the input's framework
(torch in, torch out; numpy in, numpy out; other producers through their
module's ``from_dlpack``, else as numpy arrays).

- CPU tensors run on qr-rs's CPU engine (blocked compact-WY, all cores).
  Inputs are copied before computing, so non-contiguous (transposed,
  sliced, broadcast) inputs are accepted, and the inputs are never written.
- CUDA tensors (torch, CuPy) run on qr-rs's CUDA engine for their device,
  created on first use (its kernels compile once per process, and are
  kept across processes in the PTX cache, ``QR_GPU_CACHE_DIR``). Zero
  copy: inputs are read in place where they are contiguous and start on
  a 256-byte boundary (else copied first), results are allocated by the
  input's framework on its device. The work is queued on the framework's
  current stream of that device, ordered with the caller's other kernels
  like a torch operation: the call returns without waiting for the GPU.
  Inputs are never written.
- The GIL is released while computing (or queueing): several Python
  threads may call these functions at once.
- Results do not carry autograd history. A torch tensor that requires grad
  is refused while grad mode is on (``torch.no_grad()`` or ``.detach()``).
- ``return_info=True`` adds ``info``, an int32 array of the batch shape: 0
  for a matrix computed, 1 for one holding a NaN or an infinity (its
  results are NaN; the rest of the batch is unaffected), 2 for one whose
  ``R`` does not fit float32.
"""

from __future__ import annotations

import sys
from collections import namedtuple
from typing import Any, Callable, Tuple

from . import _cuda, _native

__all__ = [
    "geqrf",
    "householder_product",
    "orgqr",
    "ormqr",
    "qr",
    "backend",
    "GeqrfResult",
    "GeqrfInfoResult",
    "QRResult",
    "QRInfoResult",
]

#: ``geqrf``'s result: the field names of ``torch.geqrf``'s.
GeqrfResult = namedtuple("GeqrfResult", ["a", "tau"])
#: ``geqrf(..., return_info=True)``'s result.
GeqrfInfoResult = namedtuple("GeqrfInfoResult", ["a", "tau", "info"])
#: ``qr``'s result: the field names of ``torch.linalg.qr``'s.
QRResult = namedtuple("QRResult", ["Q", "R"])
#: ``qr(..., return_info=True)``'s result.
QRInfoResult = namedtuple("QRInfoResult", ["Q", "R", "info"])


def backend(device: Any = None) -> str:
    """One line naming the engine that CPU tensors run on, or, given a
    CUDA tensor (or a torch device such as ``"cuda:0"``), the engine of
    that tensor's device (created if needed)."""
    if device is None:
        return _native.describe_cpu()
    on = _cuda.device_of(device)
    if on is not None:
        return _native.describe_cuda(on[1])
    text = str(device)
    if text == "cuda" or text.startswith("cuda:"):
        return _native.describe_cuda(int(text.partition(":")[2] or 0))
    return _native.describe_cpu()


_root = _cuda.root


def _is_torch(x: Any) -> bool:
    return _root(x) == "torch"


def _import_from(x: Any) -> Callable[[Any], Any]:
    """The ``from_dlpack`` of ``x``'s framework (numpy's for unknown ones)."""
    root = _root(x)
    if root in ("torch", "numpy"):
        return sys.modules[root].from_dlpack
    module = sys.modules.get(root)
    if module is not None and callable(getattr(module, "from_dlpack", None)):
        return module.from_dlpack
    import numpy

    return numpy.from_dlpack


def _prepare(x: Any, name: str) -> Any:
    """What is handed to the native layer for argument ``name``."""
    if _is_torch(x):
        import torch

        if x.requires_grad:
            if torch.is_grad_enabled():
                raise RuntimeError(
                    f"{name}: qr_rs does not support autograd, and this tensor requires "
                    "grad; call it under torch.no_grad() or pass .detach()"
                )
            x = x.detach()
    elif _root(x) == "numpy" and hasattr(x, "dtype"):
        dtype = x.dtype
        if dtype.kind not in "biufc":
            raise TypeError(
                f"{name}: dtype {dtype} is not supported: qr_rs factors float32 tensors only"
            )
        if not dtype.isnative:
            # DLPack has no byte order: a native copy, same values.
            x = x.astype(dtype.newbyteorder("="))
    return x


def _contiguous(x: Any) -> Any:
    """A C-contiguous, writable copy, for producers that cannot export ``x``
    as it is (numpy before 2.1 refuses read-only arrays, for example)."""
    if _is_torch(x):
        return x.detach().contiguous().clone()
    if _root(x) == "numpy":
        import numpy

        return numpy.array(x, order="C", copy=True)
    return x


def _run(
    native: Callable[..., Any],
    cuda: Callable[..., Any],
    tensors: Tuple[Any, ...],
    names: Tuple[str, ...],
    *args: Any,
) -> Tuple[Any, ...]:
    """The call's results in its tensors' framework: ``cuda`` (a function of
    ``_cuda``) where any tensor is on a CUDA device, else ``native`` (the
    CPU engine's) with its results handed to the first tensor's framework."""
    devices = [_cuda.device_of(t) for t in tensors]
    if any(d is not None for d in devices):
        # Preparing (detaching) keeps each tensor on its device.
        prepared = tuple(_prepare(t, n) for t, n in zip(tensors, names))
        return cuda(_cuda.framework(prepared, names, devices), *prepared, *args)
    return _out(tensors[0], _call(native, tensors, names, *args))


def _call(fn: Callable[..., Any], tensors: Tuple[Any, ...], names: Tuple[str, ...], *args: Any):
    prepared = tuple(_prepare(t, n) for t, n in zip(tensors, names))
    try:
        return fn(*prepared, *args)
    except BufferError:
        # The producer refused to export its tensor as it is: retry with
        # contiguous copies (the native layer copies anyway).
        return fn(*(_contiguous(t) for t in prepared), *args)


def _out(like: Any, arrays: Tuple[Any, ...]) -> Tuple[Any, ...]:
    from_dlpack = _import_from(like)
    return tuple(from_dlpack(a) for a in arrays)


def geqrf(A: Any, *, return_info: bool = False):
    """QR of a batch of square float32 matrices in LAPACK's compact form.

    As ``torch.geqrf``: ``A`` of shape ``(..., n, n)`` gives ``(a, tau)``,
    ``a`` of shape ``(..., n, n)`` holding ``R`` on and above the diagonal
    and the Householder vectors below it (their unit leading entry
    implicit), ``tau`` of shape ``(..., n)`` their scalar factors, so that
    ``Q = H_0 H_1 ... H_{n-1}`` with ``H_j = I - tau[j] v_j v_j^T`` and
    ``A = Q R``. Signs follow LAPACK ``sgeqrf``.

    ``A`` may be non-contiguous (it is then copied); it is never written.
    With ``return_info=True`` the result has a third field ``info`` (int32,
    the batch shape). Raises ``TypeError`` for a dtype other than float32,
    ``ValueError`` for a shape that is not ``(..., n, n)``.
    """
    out = _run(_native.geqrf, _cuda.geqrf, (A,), ("A",))
    return GeqrfInfoResult(*out) if return_info else GeqrfResult(*out[:2])


def householder_product(H: Any, tau: Any, *, return_info: bool = False):
    """``Q`` from ``geqrf``'s reflectors (LAPACK ``sorgqr``).

    As ``torch.linalg.householder_product`` for square ``H``: ``H`` of
    shape ``(..., n, n)`` (only its part strictly below the diagonal is
    read) and ``tau`` of shape ``(..., k)``, ``k <= n``, give
    ``Q = H_0 H_1 ... H_{k-1}`` of shape ``(..., n, n)``. Batch shapes must
    match exactly (no broadcasting).

    Inputs may be non-contiguous (they are then copied); they are never
    written. With
    ``return_info=True`` the result is ``(Q, info)``: ``info`` is 1 where
    the reflectors hold a NaN or an infinity (that ``Q`` is NaN).
    """
    q, info = _run(_native.orgqr, _cuda.orgqr, (H, tau), ("H", "tau"))
    return (q, info) if return_info else q


#: LAPACK's name for :func:`householder_product`.
orgqr = householder_product


def ormqr(
    H: Any,
    tau: Any,
    C: Any,
    left: bool = True,
    transpose: bool = False,
    *,
    return_info: bool = False,
):
    """Applies ``Q`` (or ``Q^T``) of ``geqrf``'s reflectors to ``C``.

    As ``torch.ormqr`` for square ``H``: ``H`` of shape ``(..., n, n)``,
    ``tau`` of shape ``(..., k)`` with ``k <= n``; ``left=True`` computes
    ``op(Q) @ C`` for ``C`` of shape ``(..., n, m)``, ``left=False``
    computes ``C @ op(Q)`` for ``C`` of shape ``(..., m, n)``, with
    ``op(Q) = Q^T`` when ``transpose`` is true. Batch shapes must match.

    Inputs may be non-contiguous (they are then copied); they are never
    written (the
    result is a new array). With ``return_info=True`` the result is
    ``(C', info)``.
    """
    flags = (bool(left), bool(transpose))
    c, info = _run(_native.ormqr, _cuda.ormqr, (H, tau, C), ("H", "tau", "C"), *flags)
    return (c, info) if return_info else c


def qr(A: Any, mode: str = "reduced", *, return_info: bool = False):
    """``A = Q R`` of a batch of square float32 matrices.

    As ``torch.linalg.qr(A)`` (mode ``"reduced"``, the same as
    ``"complete"`` for square matrices): ``A`` of shape ``(..., n, n)``
    gives ``(Q, R)``, both ``(..., n, n)``, ``R`` upper triangular with
    ``geqrf``'s signs and ``Q`` its ``householder_product``. Mode ``"r"``
    returns ``(empty, R)`` as torch does.

    ``A`` may be non-contiguous (it is then copied); it is never written.
    With
    ``return_info=True`` the result has a third field ``info``; a matrix
    holding a NaN or an infinity gets 1 and NaN in its ``Q`` and ``R``.
    """
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    q, r, info = _run(_native.qr, _cuda.qr, (A,), ("A",))
    if mode == "r":
        q = q[..., :0, :0].reshape(0)
    return QRInfoResult(q, r, info) if return_info else QRResult(q, r)
