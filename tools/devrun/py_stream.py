"""qr_rs.geqrf's CUDA-event time at a small case on torch's legacy default
stream and on a stream of its own (torch.cuda.Stream), as qr_rs.bench
times it (256 MiB written before each call).

usage: python3 py_stream.py [BATCH N]   (qr_rs and torch importable)
"""
import os
import sys

import torch

import qr_rs

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_overhead import event_times  # noqa: E402

BATCH, N = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (20, 32)


def main():
    a = torch.randn(BATCH, N, N, device="cuda")
    print(f"{BATCH} x {N}: legacy default stream {event_times(lambda: qr_rs.geqrf(a), 0):.1f} us", flush=True)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        a2 = a.clone()
        print(f"{BATCH} x {N}: a stream of its own {event_times(lambda: qr_rs.geqrf(a2), 0):.1f} us")


if __name__ == "__main__":
    main()
