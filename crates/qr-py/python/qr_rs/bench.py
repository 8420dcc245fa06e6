"""``python -m qr_rs.bench``: qr_rs against its peers on the qr_v2 benchmark set.

One process, one device. For each case of the design's benchmark set
(``docs``: ``../shared/DESIGN.md`` section 2) and each operation:

- ``geqrf``: ``qr_rs.geqrf`` against ``torch.geqrf``;
- ``orgqr``: ``qr_rs.householder_product`` against
  ``torch.linalg.householder_product``, each on reflectors made once by its own ``geqrf``;
- ``qr``: ``qr_rs.qr`` against ``torch.linalg.qr`` (``numpy.linalg.qr``
  where torch is not installed, which computes in float64 internally;
  ``geqrf`` and ``orgqr`` then have no peer).

With ``--seed SUBMISSION --seed-anchor ANCHOR`` the geqrf rows also time
the seed (the leaderboard entry qr-rs rebuilt): ``ANCHOR`` is the
project's ``anchor_qr_v2.py``, whose ``load_seed(SUBMISSION)`` gives the
module whose ``custom_kernel(A)`` returns ``(H, tau)``; the seed's result
is gated too.

Each case times a list of inputs as ``qr suite`` does (the ranking's
rule): ``256 MiB / input bytes`` of them, at least 1 and at most 50,
created once. A timed pass writes a 256 MiB buffer (evicting the caches;
on CUDA a device buffer, which flushes L2), then calls once per input of
the list back to back; its time over the list's length is the pass's time
per call. One untimed warm-up pass comes first, and the time is the median
of passes run until ``--budget`` seconds per (case, op, side) have passed.
On ``--device cuda`` the inputs live on the device and passes are timed
with CUDA events on torch's current stream, which qr_rs queues its work on
(after the stream's earlier work, before its later work), so an event pair
brackets the whole pass, its stream ordering included. The stream is held
busy before the start event for twice the previous pass's host time, so
the events time the device's work and not the host's queueing (as ``qr
suite`` does from Rust); the host's time per call (from the first call to
the last one's return, before waiting on the device) is reported beside it,
and a call that waits on the device inside a pass is timed with its wait.
The first input is gated.

Every result timed is checked in float64 (``eps = 2^-23``, ``||.||_1`` the
largest absolute column sum, per matrix, the worst reported):

- ``geqrf``: ``sfr = ||R - Q^T A||_1 / (n eps ||A||_1)`` and
  ``orth = ||Q^T Q - I||_1 / (n eps)``, ``Q`` formed in float64 from the
  reflectors (independently of qr_rs);
- ``orgqr``: ``qerr = ||Q - Q64||_1 / (n eps)`` and ``orth``;
- ``qr``: ``recon = ||A - Q R||_1 / (n eps ||A||_1)`` and ``orth``.

The gate is the contract's (20 for sfr, qerr and recon; 100 for orth);
"ok" also meets the project's bar (5 and 25), "gate" passes the gate only.
The exit status is 1 if any result fails the gate.

The inputs follow the design's generators (the same draws as the pytest
suite's ``qr_reference.generate``, which is not installed with the
package). ``--quick`` caps every batch at 4 for a smoke run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

import qr_rs

EPS = 2.0**-23
#: The contract's gate and the project's (stricter) bar, per measure.
GATE = {"sfr": 20.0, "qerr": 20.0, "recon": 20.0, "orth": 100.0}
BAR = {"sfr": 5.0, "qerr": 5.0, "recon": 5.0, "orth": 25.0}
EVICT_BYTES = 256 << 20
#: The list of inputs timed together: its bytes and most inputs (the
#: ranking's, as ``qr suite``).
LIST_BYTES = 256 << 20
MAX_INPUTS = 50
QUICK_BATCH = 4

#: The design's benchmark set: (batch, n, cond, case).
BENCHMARK_SET: Tuple[Tuple[int, int, float, str], ...] = (
    (20, 32, 1, "dense"),
    (40, 176, 1, "dense"),
    (40, 352, 1, "dense"),
    (640, 512, 2, "dense"),
    (60, 1024, 2, "dense"),
    (8, 2048, 1, "dense"),
    (2, 4096, 1, "dense"),
    (640, 512, 2, "mixed"),
    (60, 1024, 2, "mixed"),
    (640, 512, 0, "rankdef"),
    (640, 512, 0, "clustered"),
    (60, 1024, 0, "nearrank"),
    (640, 512, 0, "rowscale"),
    (640, 512, 0, "nearcollinear"),
)
OPS = ("geqrf", "orgqr", "qr")
_OP_ALIASES = {"householder_product": "orgqr", "orgqr": "orgqr", "geqrf": "geqrf", "qr": "qr"}

# ---------------------------------------------------------------------------
# Inputs: the qr_v2 distributions (design section 2), float64 rounded once.

_MIXED = ("dense",) * 6 + ("rankdef", "nearrank", "clustered", "band", "rowscale", "nearcollinear")


def _down(c: float, n: int) -> np.ndarray:
    return 10.0 ** np.linspace(0.0, -c, n)


def _profile(case: str, n: int, cond: float, rng: np.random.Generator) -> np.ndarray:
    a = rng.standard_normal((n, n))
    cols = _down(cond, n) if cond else np.ones(n)
    r = min(max(3 * n // 4, 1), n)
    if case == "dense":
        return a * cols
    if case == "upper":
        a = np.triu(a)
        a[np.diag_indices(n)] += np.linspace(1.0, 0.25, n)
        return a * cols
    if case == "diagonal":
        return np.diag(rng.choice([-1.0, 1.0], size=n) * _down(max(cond, 2.0), n))
    if case == "rankdef":
        a[:, r:] = 0.0
        return a * cols
    if case == "nearrank":
        a[:, r:] = a[:, : n - r] + 1e-5 * rng.standard_normal((n, n - r))
        return a * cols
    if case == "clustered":
        s = np.ones(n)
        s[n // 2 :] = 4.0 * EPS
        if n >= 8:
            s[n // 2 - 2 : n // 2 + 2] = np.sqrt(EPS)
        return a * s
    if case == "band":
        i, j = np.indices((n, n))
        a[np.abs(i - j) > min(max(n // 32, 2), 32)] = 0.0
        a[np.diag_indices(n)] += np.linspace(1.0, 0.5, n)
        return a * cols
    if case == "nearcollinear":
        return (rng.standard_normal((n, 1)) + 1e-4 * a) * cols
    if case == "rowscale":
        return a * _down(max(cond, 4.0), n)[:, None]
    raise ValueError(f"unknown case {case!r}")


def generate(case: str, batch: int, n: int, cond: float, seed: int = 0) -> np.ndarray:
    """``batch`` float32 matrices of order ``n`` drawn from ``case``."""
    rng = np.random.default_rng(seed)
    profiles = [case] * batch
    if case == "mixed":
        profiles = [str(rng.choice(_MIXED)) for _ in range(batch)]
        if batch >= 2:  # at least one dense and one other, at random positions
            k, m = rng.choice(batch, size=2, replace=False)
            profiles[k] = "dense"
            if profiles[m] == "dense":
                profiles[m] = str(rng.choice(_MIXED[6:]))
    out = np.empty((batch, n, n), dtype=np.float32)
    for b, p in enumerate(profiles):
        out[b] = _profile(p, n, cond, rng)
    return out


# ---------------------------------------------------------------------------
# The float64 gate, per matrix, over chunks of the batch (bounded memory).


def _norm1(x: np.ndarray) -> np.ndarray:
    return np.abs(x).sum(axis=-2).max(axis=-1)


def _scaled(x: np.ndarray, by: np.ndarray) -> np.ndarray:
    x, by = np.broadcast_arrays(np.asarray(x, float), np.asarray(by, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = x / by
    return np.where(by > 0, out, np.where(x == 0, 0.0, np.inf))


def q64(h: np.ndarray, tau: np.ndarray, nb: int = 32) -> np.ndarray:
    """``Q = H_0 ... H_{k-1}`` of ``(c, n, n)`` reflectors, in float64, by
    blocks of ``nb`` (compact WY, LAPACK ``slarft``'s ``T``)."""
    h = np.asarray(h, np.float64)
    tau = np.asarray(tau, np.float64)
    c, n, _ = h.shape
    k = tau.shape[-1]
    v = np.tril(h[..., :k], -1)
    v[:, np.arange(k), np.arange(k)] = 1.0
    q = np.broadcast_to(np.eye(n), (c, n, n)).copy()
    for j0 in reversed(range(0, k, nb)):
        j1 = min(j0 + nb, k)
        vb, t = v[:, j0:, j0:j1], tau[:, j0:j1]
        g = np.swapaxes(vb, -1, -2) @ vb
        tm = np.zeros((c, j1 - j0, j1 - j0))
        for i in range(j1 - j0):
            tm[:, i, i] = t[:, i]
            if i:
                tm[:, :i, i] = -t[:, i, None] * (tm[:, :i, :i] @ g[:, :i, i, None])[..., 0]
        qb = q[:, j0:, j0:]
        qb -= vb @ (tm @ (np.swapaxes(vb, -1, -2) @ qb))
    return q


def _orth(q: np.ndarray) -> np.ndarray:
    n = q.shape[-1]
    return _scaled(_norm1(np.swapaxes(q, -1, -2) @ q - np.eye(n)), n * EPS)


def _gate_chunk(op: str, a: np.ndarray, out: Sequence[np.ndarray]) -> Dict[str, np.ndarray]:
    n = a.shape[-1]
    if op == "geqrf":
        h, tau = out
        q = q64(h, tau)
        r = np.triu(np.asarray(h, np.float64))
        sfr = _scaled(_norm1(r - np.swapaxes(q, -1, -2) @ a), n * EPS * _norm1(a))
        return {"sfr": sfr, "orth": _orth(q)}
    if op == "orgqr":
        q, h, tau = out
        q = np.asarray(q, np.float64)
        return {"qerr": _scaled(_norm1(q - q64(h, tau)), n * EPS), "orth": _orth(q)}
    q, r = (np.asarray(x, np.float64) for x in out)
    recon = _scaled(_norm1(a - q @ r), n * EPS * _norm1(a))
    return {"recon": recon, "orth": _orth(q)}


def gate(op: str, a: np.ndarray, out: Sequence[np.ndarray]) -> Dict[str, Any]:
    """The worst value of each measure over the batch, and the verdicts.

    ``out`` is ``(H, tau)`` for geqrf, ``(Q, H, tau)`` for orgqr and
    ``(Q, R)`` for qr, as numpy arrays of ``a``'s batch shape."""
    b, n = a.shape[0], a.shape[-1]
    chunk = max(1, (8 << 20) // max(n * n, 1))
    worst: Dict[str, float] = {}
    for s in range(0, b, chunk):
        part = _gate_chunk(
            op, np.asarray(a[s : s + chunk], np.float64), [x[s : s + chunk] for x in out]
        )
        for key, vals in part.items():
            vals = np.where(np.isnan(vals), np.inf, vals)
            worst[key] = max(worst.get(key, 0.0), float(vals.max(initial=0.0)))
    return {
        "values": worst,
        "gate_pass": all(v <= GATE[k] for k, v in worst.items()),
        "bar_pass": all(v <= BAR[k] for k, v in worst.items()),
    }


# ---------------------------------------------------------------------------
# Timing.


def list_length(batch: int, n: int) -> int:
    """Inputs in a case's list: ``LIST_BYTES`` over one input's bytes, at
    least 1, at most ``MAX_INPUTS`` (``qr suite``'s rule)."""
    return max(1, min(MAX_INPUTS, LIST_BYTES // max(1, batch * n * n * 4)))


class _CpuTimer:
    """Wall time per call of one pass over ``fns`` after writing a 256 MiB
    host buffer: ``(seconds, host seconds)``, the same here."""

    def __init__(self) -> None:
        self.buf = np.empty(EVICT_BYTES // 8)
        self.k = 0

    def __call__(self, fns: Sequence[Callable[[], Any]]) -> Tuple[float, float]:
        self.k += 1
        self.buf.fill(float(self.k))
        t0 = time.perf_counter()
        for fn in fns:
            fn()
        t = (time.perf_counter() - t0) / len(fns)
        return t, t


class _CudaTimer:
    """CUDA-event time per call of one pass over ``fns`` on torch's current
    stream after writing a 256 MiB device buffer (which flushes L2), and the
    host's time per call queueing them: ``(seconds, host seconds)``.

    Before the start event the stream is held busy (``torch.cuda._sleep``)
    for twice the last pass's host time (at most ``MAX_HOLD_S``), so that
    the whole pass is queued before the device reaches it and the events
    time the device's work, as ``qr suite`` does from Rust, whose host
    queues faster than the device runs; the host's own time is the second
    figure. A call that waits on
    the device inside the pass releases the hold and is timed with its
    wait."""

    # Sleep cycles per second asked of the hold: more than any device's
    # clock, so a hold lasts at least as long as asked.
    HOLD_HZ = 2.0e9
    # Longest hold: a call that waits on the device itself (torch's
    # per-matrix loops) gains nothing from a longer one.
    MAX_HOLD_S = 0.05

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.buf = torch.empty(EVICT_BYTES // 4, dtype=torch.float32, device="cuda")
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)
        self.sleep = getattr(torch.cuda, "_sleep", None)
        self.host = 0.0

    def __call__(self, fns: Sequence[Callable[[], Any]]) -> Tuple[float, float]:
        self.buf.fill_(1.0)
        if self.sleep is not None and self.host > 0.0:
            hold = min(2.0 * self.host * len(fns), self.MAX_HOLD_S)
            self.sleep(int(hold * self.HOLD_HZ))
        self.start.record()
        t0 = time.perf_counter()
        for fn in fns:
            fn()
        self.host = (time.perf_counter() - t0) / len(fns)
        self.end.record()
        self.end.synchronize()
        return self.start.elapsed_time(self.end) / 1e3 / len(fns), self.host


def measure(timer: Callable[[Sequence[Callable[[], Any]]], Tuple[float, float]],
            fns: Sequence[Callable[[], Any]], budget: float) -> Tuple[float, int, float]:
    """One warm-up pass, then passes until ``budget`` seconds of wall time
    have passed (at least one): ``(median seconds per call, passes, median
    host seconds per call)``."""
    timer(fns)
    times: List[float] = []
    hosts: List[float] = []
    t0 = time.perf_counter()
    while not times or (time.perf_counter() - t0 < budget and len(times) < 100_000):
        t, h = timer(fns)
        times.append(t)
        hosts.append(h)
    return statistics.median(times), len(times), statistics.median(hosts)


# ---------------------------------------------------------------------------
# The run.


def _torch() -> Optional[Any]:
    try:
        import torch
    except ImportError:
        return None
    return torch


def _np(x: Any) -> np.ndarray:
    if type(x).__module__.split(".")[0] == "torch":
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _qr_rs_cuda_reason(torch: Any) -> Optional[str]:
    """None if qr_rs runs CUDA tensors here, else why not (one line)."""
    try:
        qr_rs.geqrf(torch.eye(2, device="cuda").unsqueeze(0))
        torch.cuda.synchronize()
    except (NotImplementedError, RuntimeError) as e:
        return f"qr_rs: not timed on cuda ({str(e).splitlines()[0]})"
    return None


def _load_seed(anchor: Optional[str], submission: str) -> Callable[[Any], Any]:
    """The seed's ``custom_kernel``, loaded by the anchor script's
    ``load_seed``."""
    import importlib.util

    if not anchor:
        raise SystemExit("--seed needs --seed-anchor (the project's anchor_qr_v2.py)")
    spec = importlib.util.spec_from_file_location("qr_rs_seed_anchor", anchor)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--seed-anchor {anchor}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load_seed(submission).custom_kernel


def _calls(op: str, lib: str, torch: Any, a: Any, h: Any, tau: Any) -> Optional[Callable[[], Any]]:
    if lib == "qr_rs":
        return {
            "geqrf": lambda: qr_rs.geqrf(a),
            "orgqr": lambda: qr_rs.householder_product(h, tau),
            "qr": lambda: qr_rs.qr(a),
        }[op]
    if lib == "torch":
        return {
            "geqrf": lambda: torch.geqrf(a),
            "orgqr": lambda: torch.linalg.householder_product(h, tau),
            "qr": lambda: torch.linalg.qr(a),
        }[op]
    if lib == "numpy" and op == "qr":
        return lambda: np.linalg.qr(a)
    return None


_PEER_NAMES = {
    ("torch", "geqrf"): "torch.geqrf",
    ("torch", "orgqr"): "torch.linalg.householder_product",
    ("torch", "qr"): "torch.linalg.qr",
    ("numpy", "qr"): "numpy.linalg.qr",
}


def _gate_inputs(op: str, a_np: np.ndarray, out: Any, h: Any, tau: Any) -> List[np.ndarray]:
    if op == "orgqr":
        return [_np(out), _np(h), _np(tau)]
    return [_np(x) for x in out]


def run(args: argparse.Namespace, log: Callable[[str], None] = print) -> Dict[str, Any]:
    torch = _torch()
    cuda = args.device == "cuda"
    if cuda and (torch is None or not torch.cuda.is_available()):
        raise SystemExit("--device cuda needs torch with a usable CUDA device")
    peer_lib = "torch" if torch is not None else "numpy"
    timer = _CudaTimer(torch) if cuda else _CpuTimer()
    qr_rs_skip = _qr_rs_cuda_reason(torch) if cuda else None
    seed_fn = _load_seed(args.seed_anchor, args.seed) if args.seed else None

    if cuda:
        device_name = torch.cuda.get_device_name()
    else:
        device_name = f"cpu ({platform.machine()}, {os.cpu_count()} logical cores)"
    meta = {
        "device": args.device,
        "device_name": device_name,
        "qr_rs_backend": qr_rs.backend("cuda" if cuda and qr_rs_skip is None else None),
        "qr_rs_timed": qr_rs_skip is None,
        "qr_rs_note": qr_rs_skip,
        "peer": peer_lib,
        "torch": getattr(torch, "__version__", None),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "budget_s": args.budget,
        "quick": args.quick,
        "evict_bytes": EVICT_BYTES,
        "statistic": "median over passes of seconds per call (whole batch), a pass calling "
        "once per input of the case's list",
        "list_bytes": LIST_BYTES,
        "max_inputs": MAX_INPUTS,
    }
    log(f"device: {device_name}")
    log(f"qr_rs: {meta['qr_rs_backend']}")
    log(
        f"peer: {peer_lib} {meta['torch'] or np.__version__}"
        + (
            ""
            if torch is not None
            else " (torch absent: numpy.linalg.qr, which computes in float64, for qr;"
            " no peer for geqrf and orgqr)"
        )
    )
    if qr_rs_skip:
        log(qr_rs_skip)
    log(
        f"median of passes over {args.budget:g} s per (case, op, side), after a warm-up pass; "
        f"a pass: {EVICT_BYTES >> 20} MiB written, then one call per input of the case's list "
        f"({LIST_BYTES >> 20} MiB of inputs, 1 to {MAX_INPUTS}), time per call"
        + (f"; --quick: batch capped at {QUICK_BATCH}" if args.quick else "")
    )
    log(_HEADER)

    rows: List[Dict[str, Any]] = []
    for batch0, n, cond, case in args.cases:
        batch = min(batch0, QUICK_BATCH) if args.quick else batch0
        count = list_length(batch, n)
        # The first input is the one gated; the others are further draws.
        a_nps = [
            generate(case, batch, n, cond, seed=batch0 * 1000 + n + 7919 * i)
            for i in range(count)
        ]
        a_np = a_nps[0]
        if torch is not None:
            inputs = [torch.from_numpy(x) for x in a_nps]
            inputs = [x.cuda() for x in inputs] if cuda else inputs
        else:
            inputs = a_nps
        a = inputs[0]
        # Each library's orgqr takes its own geqrf's reflectors, made once:
        # what a caller chaining the two does (torch's are column-major,
        # which qr_rs would copy first).
        refl: Dict[str, List[Tuple[Any, Any]]] = {}
        if "orgqr" in args.ops:
            refl["qr_rs"] = [tuple(qr_rs.geqrf(x)) for x in inputs]
            if peer_lib == "torch":
                refl["torch"] = [tuple(torch.geqrf(x)) for x in inputs]

        def calls(lib: str) -> Optional[List[Callable[[], Any]]]:
            pairs = refl.get(lib, [(None, None)] * count)
            fns = [_calls(op, lib, torch, x, h, t) for x, (h, t) in zip(inputs, pairs)]
            return None if fns[0] is None else fns

        for op in args.ops:
            row: Dict[str, Any] = {
                "shape": f"{batch0}x{n}",
                "spec": f"{batch0},{n},{cond:g},{case}",
                "batch": batch,
                "n": n,
                "cond": float(cond),
                "case": case,
                "op": op,
                "inputs": count,
                "qr_rs_s": None,
                "qr_rs_host_s": None,
                "qr_rs_reps": 0,
                "peer": _PEER_NAMES.get((peer_lib, op)),
                "peer_s": None,
                "peer_host_s": None,
                "peer_reps": 0,
                "ratio": None,
            }
            gated = None
            if qr_rs_skip is None:
                h, tau = refl["qr_rs"][0] if "qr_rs" in refl else (None, None)
                fns = calls("qr_rs")
                row["qr_rs_s"], row["qr_rs_reps"], row["qr_rs_host_s"] = measure(
                    timer, fns, args.budget
                )
                gated = ("qr_rs", fns[0](), h, tau)
            peer_fns = calls(peer_lib)
            if peer_fns is not None:
                ph, ptau = refl[peer_lib][0] if peer_lib in refl else (None, None)
                row["peer_s"], row["peer_reps"], row["peer_host_s"] = measure(
                    timer, peer_fns, args.budget
                )
                if gated is None:
                    gated = (row["peer"], peer_fns[0](), ph, ptau)
            if row["qr_rs_s"] and row["peer_s"]:
                row["ratio"] = row["peer_s"] / row["qr_rs_s"]
            if seed_fn is not None and op == "geqrf":
                seed_fns = [lambda x=x: seed_fn(x) for x in inputs]
                row["seed_s"], row["seed_reps"], _ = measure(timer, seed_fns, args.budget)
                seed_gate = gate(op, a_np, [_np(x) for x in seed_fn(a)])
                row["seed_gate"] = seed_gate["values"]
                if row["qr_rs_s"]:
                    row["seed_ratio"] = row["seed_s"] / row["qr_rs_s"]
            if gated is not None:
                g = gate(op, a_np, _gate_inputs(op, a_np, *gated[1:]))
                row.update(gated=gated[0], gate=g["values"])
                row.update(gate_pass=g["gate_pass"], bar_pass=g["bar_pass"])
            rows.append(row)
            log(_format_row(row))
    summary = _summary(rows, args.ops)
    for line in summary["lines"]:
        log(line)
    return {"meta": meta, "rows": rows, "geomean_ratio": summary["geomean_ratio"]}


# ---------------------------------------------------------------------------
# Output.

_HEADER = (
    f"{'case (batch,n,cond,case)':<28} {'op':<6} {'batch':>5} {'list':>4} {'qr_rs us':>12} "
    f"{'host us':>9} "
    f"{'peer':<34} {'peer us':>12} {'peer/qr_rs':>10}  gate"
)


def _us(s: Optional[float]) -> str:
    return "-" if s is None else f"{s * 1e6:,.1f}"


def _format_row(row: Dict[str, Any]) -> str:
    ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}x"
    gate_txt = "-"
    if "gate" in row:
        vals = " ".join(f"{k} {v:.3g}" for k, v in row["gate"].items())
        verdict = "ok" if row["bar_pass"] else ("gate" if row["gate_pass"] else "FAIL")
        who = "" if row["gated"] == "qr_rs" else f" (of {row['gated']})"
        gate_txt = f"{vals} {verdict}{who}"
    line = (
        f"{row['spec']:<28} {row['op']:<6} {row['batch']:>5} {row['inputs']:>4} "
        f"{_us(row['qr_rs_s']):>12} {_us(row['qr_rs_host_s']):>9} "
        f"{row['peer'] or '-':<34} {_us(row['peer_s']):>12} {ratio:>10}  {gate_txt}"
    )
    if "seed_s" in row:
        seed_ratio = row.get("seed_ratio")
        sfr = row["seed_gate"].get("sfr", float("nan"))
        line += f"; seed {_us(row['seed_s'])} us" + (
            f" ({seed_ratio:.2f}x)" if seed_ratio else ""
        ) + f" sfr {sfr:.3g}"
    return line


def _summary(rows: List[Dict[str, Any]], ops: Sequence[str]) -> Dict[str, Any]:
    lines, geo = [], {}
    for op in ops:
        ratios = [r["ratio"] for r in rows if r["op"] == op and r["ratio"]]
        if ratios:
            geo[op] = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
            lines.append(
                f"geometric mean of peer/qr_rs, {op}: {geo[op]:.2f}x over {len(ratios)} cases"
            )
    failed = [f"{r['spec']} {r['op']}" for r in rows if r.get("gate_pass") is False]
    lines.append(
        f"gate: {len(failed)} of {sum('gate' in r for r in rows)} failed: {', '.join(failed)}"
        if failed
        else f"gate: all {sum('gate' in r for r in rows)} results pass"
    )
    return {"lines": lines, "geomean_ratio": geo}


# ---------------------------------------------------------------------------
# Command line.


def _shape_filter(text: str) -> List[Tuple[int, int]]:
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            b, n = (int(x) for x in part.lower().split("x"))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"shape {part!r} is not BATCHxN (e.g. 640x512)"
            ) from None
        out.append((b, n))
    return out


def _op_filter(text: str) -> List[str]:
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        if part not in _OP_ALIASES:
            raise argparse.ArgumentTypeError(f"op {part!r} is not one of {', '.join(OPS)}")
        if _OP_ALIASES[part] not in out:
            out.append(_OP_ALIASES[part])
    return out


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m qr_rs.bench",
        description="qr_rs against torch (or numpy) on the qr_v2 benchmark set, "
        "with the float64 gate per case.",
    )
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument(
        "--budget",
        type=float,
        default=2.0,
        help="seconds of repetitions per case, op and side (default 2)",
    )
    p.add_argument(
        "--shapes", type=_shape_filter, help="the set's BATCHxN shapes to keep, e.g. 20x32,40x176"
    )
    p.add_argument("--cases", help="the set's cases to keep, e.g. dense,mixed")
    p.add_argument("--ops", type=_op_filter, default=list(OPS), help="geqrf,orgqr,qr (default all)")
    p.add_argument(
        "--quick", action="store_true", help=f"cap every batch at {QUICK_BATCH} (a smoke run)"
    )
    p.add_argument("--json", metavar="FILE", help="also write the rows and settings as JSON")
    p.add_argument(
        "--seed",
        metavar="SUBMISSION",
        help="also time the seed's geqrf from this submission file (needs --seed-anchor)",
    )
    p.add_argument(
        "--seed-anchor",
        metavar="ANCHOR",
        help="the project's anchor_qr_v2.py, whose load_seed loads --seed",
    )
    args = p.parse_args(argv)
    if args.budget < 0:
        p.error("--budget must be >= 0")
    cases = list(BENCHMARK_SET)
    if args.shapes:
        known = list(dict.fromkeys((b, n) for b, n, _, _ in BENCHMARK_SET))
        unknown = [f"{b}x{n}" for b, n in args.shapes if (b, n) not in known]
        if unknown:
            shapes = ", ".join(f"{b}x{n}" for b, n in known)
            p.error(f"--shapes: {', '.join(unknown)} not in the benchmark set ({shapes})")
        cases = [c for c in cases if (c[0], c[1]) in set(args.shapes)]
    if args.cases:
        keep = {c.strip() for c in args.cases.split(",") if c.strip()}
        bad = keep - {c[3] for c in BENCHMARK_SET}
        if bad:
            p.error(f"--cases: {', '.join(sorted(bad))} not in the benchmark set")
        cases = [c for c in cases if c[3] in keep]
    if not cases or not args.ops:
        p.error("the filters leave nothing to run")
    args.cases = cases
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    result = run(args, lambda line: print(line, flush=True))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return 0 if all(r.get("gate_pass", True) for r in result["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
