"""Where qr_rs.geqrf's time goes at a small case on CUDA tensors: the
host's time per call (queued back to back, no synchronize), the CUDA-event
time as `qr_rs.bench` takes it (256 MiB written, start, call, end), the
same with the stream held busy for about a millisecond before the start
event (so the host's queueing is off the measured span), and a profile
of the host side by function.

usage: python3 py_overhead.py [BATCH N]   (qr_rs and torch importable)
"""
import cProfile
import pstats
import statistics
import sys
import time

import torch

import qr_rs

BATCH, N = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (20, 32)
REPS = 400


def host_per_call(fn, reps=2000):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) / reps * 1e6, (t2 - t0) / reps * 1e6


def event_times(fn, hold_cycles):
    buf = torch.empty(64 << 20, dtype=torch.float32, device="cuda")
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    out = []
    fn()
    for _ in range(REPS):
        buf.fill_(1.0)
        if hold_cycles:
            torch.cuda._sleep(hold_cycles)
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) * 1e3)
    return statistics.median(out)


def main():
    a = torch.randn(BATCH, N, N, device="cuda")
    calls = {
        "qr_rs.geqrf": lambda: qr_rs.geqrf(a),
        "torch.empty x3": lambda: (
            torch.empty(BATCH, N, N, device="cuda"),
            torch.empty(BATCH, N, device="cuda"),
            torch.empty(BATCH, dtype=torch.int32, device="cuda"),
        ),
        "torch.geqrf": lambda: torch.geqrf(a),
    }
    print(f"{torch.cuda.get_device_name()} torch {torch.__version__}, {BATCH} x {N}")
    print(f"{'call':<16} {'host us/call':>13} {'wall us/call':>13} {'events us':>10} {'held us':>10}")
    for name, fn in calls.items():
        host, wall = host_per_call(fn, 200 if name == "torch.geqrf" else 2000)
        plain = event_times(fn, 0)
        held = event_times(fn, 2_000_000)
        print(f"{name:<16} {host:13.1f} {wall:13.1f} {plain:10.1f} {held:10.1f}")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(2000):
        qr_rs.geqrf(a)
    prof.disable()
    torch.cuda.synchronize()
    pstats.Stats(prof).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
