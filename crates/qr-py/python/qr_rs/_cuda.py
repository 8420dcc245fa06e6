"""The CUDA path of ``qr_rs``: torch tensors and CuPy arrays on a CUDA device.

Results are allocated with the input's framework on the input's device,
and the native layer queues the engine on that framework's current stream
of the device (``torch.cuda.current_stream``, CuPy's current stream): the
call returns once the work is queued, ordered after everything queued on
that stream before and before everything queued after, as a torch kernel
is. Inputs are read in place (zero copy) where they are contiguous and
start on a 256-byte boundary (any tensor of its own allocation); others
are copied first, on the same stream.
"""

from __future__ import annotations

from typing import Any, Sequence, Tuple

from . import _native

#: ``torch.float32`` once a torch adapter exists (the fast dtype check).
_TORCH_F32: Any = None

#: What the native layer asks of an input's address (``RAW_ALIGN``).
ALIGN = 256


def root(x: Any) -> str:
    """The top-level module of ``x``'s type (``torch``, ``numpy``...)."""
    return type(x).__module__.split(".")[0]


def device_of(x: Any):
    """``("cuda", ordinal)`` for a CUDA tensor or array, else ``None``."""
    if root(x) == "torch" and hasattr(x, "is_cuda"):
        # torch's own attributes: its __dlpack_device__ is a Python method
        # that costs a few microseconds a call.
        return ("cuda", x.get_device()) if x.is_cuda else None
    dev = getattr(x, "__dlpack_device__", None)
    if dev is None:
        return None
    try:
        kind, ordinal = dev()
    except Exception:
        return None
    # DLPack device types: 2 CUDA, 13 CUDA managed.
    return ("cuda", int(ordinal)) if int(kind) in (2, 13) else None


class _Torch:
    def __init__(self, like: Any):
        import torch

        global _TORCH_F32
        self.torch = torch
        _TORCH_F32 = torch.float32
        self.device = like.device
        self.dtypes = {"float32": torch.float32, "int32": torch.int32}
        # The current stream's raw handle without building a Stream object
        # (what torch's own extensions read); torch.cuda.current_stream
        # where a build lacks it. Both give the same handle.
        self.raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)

    def stream(self) -> int:
        if self.raw_stream is not None and self.device.index is not None:
            return int(self.raw_stream(self.device.index))
        return self.torch.cuda.current_stream(self.device).cuda_stream

    def empty(self, shape: Sequence[int], dtype: str) -> Any:
        return self.torch.empty(shape, dtype=self.dtypes[dtype], device=self.device)

    def ready(self, x: Any) -> Any:
        """``x`` contiguous and aligned, copied where it is not."""
        x = x.contiguous()
        if x.data_ptr() % ALIGN:
            x = x.clone()
        return x

    def copy(self, x: Any) -> Any:
        return x.contiguous().clone()

    def lower_from(self, h: Any, k: int) -> Any:
        """``h`` with its columns ``k..`` zeroed below the diagonal."""
        h = h.clone()
        h[..., k:] = self.torch.triu(h[..., k:], -k)
        return h


#: The torch adapter of each CUDA device used so far.
_TORCH: dict = {}


class _CuPy:
    def __init__(self, like: Any):
        import cupy

        self.cupy = cupy
        self.device = like.device

    def stream(self) -> int:
        with self.device:
            return self.cupy.cuda.get_current_stream().ptr

    def empty(self, shape: Sequence[int], dtype: str) -> Any:
        with self.device:
            return self.cupy.empty(tuple(shape), dtype=dtype)

    def ready(self, x: Any) -> Any:
        with self.device:
            x = self.cupy.ascontiguousarray(x)
            if x.data.ptr % ALIGN:
                x = x.copy()
        return x

    def copy(self, x: Any) -> Any:
        with self.device:
            return self.cupy.array(x, copy=True, order="C")

    def lower_from(self, h: Any, k: int) -> Any:
        with self.device:
            h = h.copy()
            h[..., k:] = self.cupy.triu(h[..., k:], -k)
        return h


def framework(tensors: Tuple[Any, ...], names: Tuple[str, ...], devices: Sequence[Any]):
    """The framework adapter of a call whose first CUDA tensor decides the
    device; every tensor must be on that device and of that framework.
    ``devices``: the tensors' ``device_of``."""
    first = next(i for i, d in enumerate(devices) if d is not None)
    for t, n, d in zip(tensors, names, devices):
        if d != devices[first]:
            where = "the CPU" if d is None else f"CUDA device {d[1]}"
            raise ValueError(
                f"{n} is on {where} while {names[first]} is on CUDA device "
                f"{devices[first][1]}: every tensor of a call must be on one device"
            )
    like = tensors[first]
    kind = root(like)
    for t, n in zip(tensors, names):
        if root(t) != kind:
            raise TypeError(
                f"{n} is a {root(t)} array while {names[first]} is a {kind} one: "
                "the tensors of a CUDA call must come from one framework"
            )
    if kind == "torch":
        # One adapter per device, made on its first call: the lookups it
        # holds cost more than the work of a small call.
        index = devices[first][1]
        fw = _TORCH.get(index)
        if fw is None:
            fw = _TORCH[index] = _Torch(like)
        return fw
    if kind == "cupy":
        return _CuPy(like)
    raise NotImplementedError(
        f"{names[first]}: CUDA arrays of {kind} are not supported: qr_rs writes its results "
        "into arrays it allocates with torch or CuPy; convert with torch.from_dlpack(x) "
        "or cupy.from_dlpack(x)"
    )


def _f32(x: Any, name: str) -> None:
    if _TORCH_F32 is not None and x.dtype is _TORCH_F32:
        return
    dtype = str(x.dtype).replace("torch.", "")
    if dtype != "float32":
        raise TypeError(
            f"{name}: dtype {dtype} is not supported: qr_rs factors float32 tensors only "
            "(convert with `.float()` in torch or `.astype(cupy.float32)` in CuPy)"
        )


def _shape(x: Any) -> Tuple[int, ...]:
    return tuple(int(d) for d in x.shape)


def _batch_n(x: Any, name: str) -> Tuple[Tuple[int, ...], int]:
    s = _shape(x)
    if len(s) < 2 or s[-1] != s[-2]:
        raise ValueError(
            f"{name}: expected a batch of square matrices of shape (..., n, n), got shape {s}"
        )
    return s[:-2], s[-1]


def geqrf(fw: Any, a: Any):
    _f32(a, "A")
    a = fw.ready(a)
    batch, n = _batch_n(a, "A")
    h = fw.empty(batch + (n, n), "float32")
    tau = fw.empty(batch + (n,), "float32")
    info = fw.empty(batch, "int32")
    _native.geqrf_cuda(a, h, tau, info, fw.stream())
    return h, tau, info


def _reflectors(fw: Any, h: Any, tau: Any):
    """``(H, tau)`` with ``tau`` padded to ``n`` (and ``H``'s unread columns
    zeroed) as the CPU path's ``reflectors`` does."""
    _f32(h, "H")
    _f32(tau, "tau")
    h = fw.ready(h)
    batch, n = _batch_n(h, "H")
    t = _shape(tau)
    k = t[-1] if t else -1
    if len(t) != len(batch) + 1 or t[:-1] != batch or k > n:
        raise ValueError(
            f"tau: expected shape {batch}+(k,) with k <= n = {n} to match H of shape "
            f"{batch + (n, n)}, got shape {t}"
        )
    if k < n:
        full = fw.empty(batch + (n,), "float32")
        full[...] = 0
        full[..., :k] = tau
        tau = full
        h = fw.lower_from(h, k)
    return h, fw.ready(tau)


def orgqr(fw: Any, h: Any, tau: Any):
    h, tau = _reflectors(fw, h, tau)
    batch, n = _batch_n(h, "H")
    q = fw.empty(batch + (n, n), "float32")
    info = fw.empty(batch, "int32")
    _native.orgqr_cuda(h, tau, q, info, fw.stream())
    return q, info


def ormqr(fw: Any, h: Any, tau: Any, c: Any, left: bool, transpose: bool):
    h, tau = _reflectors(fw, h, tau)
    batch, _ = _batch_n(h, "H")
    _f32(c, "C")
    out = fw.copy(c)
    info = fw.empty(batch, "int32")
    _native.ormqr_cuda(h, tau, out, info, left, transpose, fw.stream())
    return out, info


def qr(fw: Any, a: Any):
    _f32(a, "A")
    a = fw.ready(a)
    batch, n = _batch_n(a, "A")
    square = batch + (n, n)
    h = fw.empty(square, "float32")
    tau = fw.empty(batch + (n,), "float32")
    info = fw.empty(batch, "int32")
    q = fw.empty(square, "float32")
    r = fw.empty(square, "float32")
    _native.qr_cuda(a, h, tau, info, q, r, fw.stream())
    return q, r, info

