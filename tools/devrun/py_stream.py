"""qr_rs.geqrf's CUDA-event time at a small case on torch's legacy default
stream and on a stream of its own (torch.cuda.Stream), as qr_rs.bench
times it (256 MiB written before each call).

usage: python3 py_stream.py [BATCH N]   (qr_rs and torch importable)
"""
import statistics
import sys

import torch

import qr_rs

BATCH, N = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (20, 32)


def timed(fn, reps=400):
    buf = torch.empty(64 << 20, dtype=torch.float32, device="cuda")
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    fn()
    out = []
    for _ in range(reps):
        buf.fill_(1.0)
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) * 1e3)
    return statistics.median(out)


def main():
    a = torch.randn(BATCH, N, N, device="cuda")
    print(f"{BATCH} x {N}: legacy default stream {timed(lambda: qr_rs.geqrf(a)):.1f} us", flush=True)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        a2 = a.clone()
        print(f"{BATCH} x {N}: a stream of its own {timed(lambda: qr_rs.geqrf(a2)):.1f} us")


if __name__ == "__main__":
    main()
