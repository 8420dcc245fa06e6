"""Cost model of three blockings of the batched Householder QR on the GPU
(issue 33): bytes crossing HBM, tensor-core flops, launches and the serial
reflector chain, per case of the benchmark set, and a predicted time.

usage: python3 tools/model/blocking.py [--device h200|h100] [--markdown]
       [--traffic F] [--t-step US]

Designs (n x n float32 matrices, b of them; inner panels of NB = 32 columns):
  right32   right-looking, one update per 32-column panel (qr-gpu today)
  outerK    right-looking with outer blocks of K columns (64, 128, 256): the K
            columns are loaded once, their 32-column panels factored and
            updated on chip (shared memory, or a cluster's distributed shared
            memory when m x K floats exceed one SM), written once; then one
            trailing update of rank K
  recursive Elmroth-Gustavson column recursion down to NB-column leaves:
            factor the left half, one update of the right half of rank
            w / 2, factor the right half; every update reads A2 twice and
            writes it once, as today's

Per update of an m x c trailing block by k reflectors: A2 read twice and
written once (12 m c bytes), V read twice (8 m k), useful flops 4 m c k, on
tensor cores three tf32 passes. Per panel of m x w: 8 m w bytes (read, write).

Updates whose trailing block (the whole batch's) exceeds L2 pay today's
measured extra traffic (TRAFFIC); smaller ones are charged what they need.
Time per step = max(bytes / BW, flops / TC) for the update, plus for the
panel max(bytes / BW, waves * w * T_REFL) with waves = ceil(b / (SMS *
PANELS_PER_SM)), plus T_STEP per launch step (launch and dependency gaps).
The step gaps and T_REFL are the calibrated terms: see CALIBRATION.
"""
import argparse
import math

CASES = [  # (batch, n, label) of the qr_v2 benchmark set
    (20, 32, "20x32"), (40, 176, "40x176"), (40, 352, "40x352"),
    (640, 512, "640x512"), (60, 1024, "60x1024"), (8, 2048, "8x2048"),
    (2, 4096, "2x4096"),
]

DEVICES = {
    # BW: DRAM throughput the bulk update reached (ncu, H200: 3.26 TB/s);
    # H100 scaled by the data-sheet ratio 3.35 / 4.8. TC: useful float32
    # flops of a 3-pass tf32 split, DESIGN section 3's floor figure (H200),
    # H100 the same tensor cores at the same clock. TRAFFIC: measured bytes
    # over needed bytes of today's update (ncu, 640 x 512: 1.77 / 1.22 GB).
    "h200": dict(BW=3.26e12, TC=260e12, SMS=132, L2=60 * 2**20, TRAFFIC=1.45),
    "h100": dict(BW=3.26e12 * 3.35 / 4.8, TC=260e12, SMS=132, L2=50 * 2**20, TRAFFIC=1.45),
}

NB = 32
PANELS_PER_SM = 2      # register panels resident per SM at 640 x 512
T_REFL = 0.5e-6        # one reflector of one panel block (DESIGN's chain floor)
T_STEP = 12e-6         # launch and dependency gaps per launched step (fit below)
T_STEP_ON_CHIP = 1e-6  # an inner step inside a resident block: a barrier pass


def update(m, c, k):
    return 12.0 * m * c + 8.0 * m * k, 4.0 * m * c * k


def step_time(dev, b, bytes_, flops, traffic):
    return max(b * bytes_ * traffic / dev["BW"], b * flops / dev["TC"])


def panel_time(dev, b, m, w):
    waves = math.ceil(b / (dev["SMS"] * PANELS_PER_SM))
    return max(b * 8.0 * m * w / dev["BW"], waves * w * T_REFL)


def right(dev, b, n, k_outer):
    """Right-looking with outer blocks of k_outer columns (NB: today's)."""
    out = dict(bytes=0.0, flops=0.0, steps=0, time=0.0)
    for j in range(0, n, k_outer):
        m, w = n - j, min(k_outer, n - j)
        c = n - j - w
        # The outer block's own panels: on chip for k_outer > NB, their
        # inner updates on chip too (flops counted, bytes not).
        out["bytes"] += b * 8.0 * m * w
        t = panel_time(dev, b, m, w)
        for i in range(NB, w, NB):
            _, f = update(m - i + NB, w - i, NB)
            out["flops"] += b * f
            t += b * f / dev["TC"] + T_STEP_ON_CHIP
        out["time"] += t + T_STEP
        out["steps"] += 1
        if c > 0:
            by, f = update(m, c, w)
            traffic = dev["TRAFFIC"] if b * m * c * 4 > dev["L2"] else 1.0
            out["bytes"] += b * by * traffic
            out["flops"] += b * f
            out["time"] += step_time(dev, b, by, f, traffic) + T_STEP
            out["steps"] += 1
    return out


def recursive(dev, b, n):
    out = dict(bytes=0.0, flops=0.0, steps=0, time=0.0)

    def go(j, w):
        m = n - j
        if w <= NB:
            out["bytes"] += b * 8.0 * m * w
            out["time"] += panel_time(dev, b, m, w) + T_STEP
            out["steps"] += 1
            return
        left = (w // 2 + NB - 1) // NB * NB
        go(j, left)
        by, f = update(m, w - left, left)
        t = dev["TRAFFIC"] if b * m * (w - left) * 4 > dev["L2"] else 1.0
        out["bytes"] += b * by * t
        out["flops"] += b * f
        out["time"] += step_time(dev, b, by, f, t) + T_STEP
        out["steps"] += 1
        go(j + left, w - left)

    go(0, n)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="h200", choices=sorted(DEVICES))
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--traffic", type=float, help="bytes moved over bytes needed per streamed update (default: measured)")
    ap.add_argument("--t-step", type=float, help="us of gap per launched step (default: %(default)s)")
    args = ap.parse_args()
    dev = dict(DEVICES[args.device])
    if args.traffic is not None:
        dev["TRAFFIC"] = args.traffic
    if args.t_step is not None:
        global T_STEP
        T_STEP = args.t_step * 1e-6
    designs = [("right32", lambda b, n: right(dev, b, n, NB)),
               ("outer64", lambda b, n: right(dev, b, n, 64)),
               ("outer128", lambda b, n: right(dev, b, n, 128)),
               ("outer256", lambda b, n: right(dev, b, n, 256)),
               ("recursive", lambda b, n: recursive(dev, b, n))]
    head = ["case"] + [f"{d} GB / steps / us" for d, _ in designs]
    rows, geo = [], {d: 0.0 for d, _ in designs}
    for b, n, label in CASES:
        row = [label]
        for d, f in designs:
            r = f(b, n)
            geo[d] += math.log(r["time"])
            row.append(f"{r['bytes'] / 1e9:.2f} / {r['steps']} / {r['time'] * 1e6:.0f}")
        rows.append(row)
    rows.append(["geomean (us)"] + [f"{math.exp(geo[d] / len(CASES)) * 1e6:.0f}" for d, _ in designs])
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
        for r in [head] + rows:
            print("  ".join(x.ljust(w[i]) for i, x in enumerate(r)))


if __name__ == "__main__":
    main()
