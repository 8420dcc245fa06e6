"""Issue 5's side-by-side table from one device call's logs: our
`qr suite --backend gpu --set benchmarks` output beside the seed's
(`anchor_subset.py` / `anchor_qr_v2.py` output). A case the anchor did not
time takes DESIGN's figure (section 3), marked "(DESIGN)". Prints a markdown
table with ours / seed per case, both geometric means and whether the
issue's bar (every case ahead of the seed, geomean at most a third of the
seed's) is met.

usage: python3 tools/devrun/side_by_side.py SUITE ANCHOR [--design PATH]
(--design defaults to ../shared/DESIGN.md; missing, cases the anchor lacks
are left out of both means.)
"""
import argparse
import math
import re
import sys

UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6}

# DESIGN's rows name cases "640 x 512 mixed"; plain "640 x 512" is dense.
DESIGN_ROW = re.compile(r"^\|\s*(\d+) x (\d+)\s*([a-z]*)\s*\|[^|]*\|\s*([\d,.]+)")
SUITE_ROW = re.compile(r"^(\d+),(\d+),([\d.]+),(\w+)\s+\d+\s+\d+\s+([\d.]+) (us|ms|s)\s")
ANCHOR_ROW = re.compile(r"^(\S+)\s+b=\s*(\d+)\s+n=\s*(\d+)\s+(\w+)\s+([\d.]+) us")


def suite_times(path):
    """{(batch, n, case): (spec, mean us)} of a suite log, in its order."""
    out = {}
    for line in open(path):
        m = SUITE_ROW.match(line)
        if m:
            b, n, cond, case, t, unit = m.groups()
            out[(int(b), int(n), case)] = (f"{b},{n},{cond},{case}", float(t) * UNITS[unit])
    return out


def anchor_times(path, impl):
    """{(batch, n, case): us} of implementation `impl` in an anchor log."""
    out = {}
    for line in open(path):
        m = ANCHOR_ROW.match(line)
        if m and m.group(1) == impl:
            out[(int(m.group(2)), int(m.group(3)), m.group(4))] = float(m.group(5))
    return out


def design_times(path):
    """{(batch, n, case): us} of DESIGN's seed column (section 3)."""
    out = {}
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return out
    for line in lines:
        m = DESIGN_ROW.match(line)
        if m:
            b, n, case, t = m.groups()
            out[(int(b), int(n), case or "dense")] = float(t.replace(",", ""))
    return out


def fmt(us):
    return f"{us:.2f} us" if us < 1e3 else f"{us / 1e3:.3f} ms"


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("suite")
    ap.add_argument("anchor")
    ap.add_argument("--design", default="../shared/DESIGN.md")
    ap.add_argument("--impl", default="seed", help="anchor implementation to compare with")
    args = ap.parse_args()
    ours = suite_times(args.suite)
    if not ours:
        sys.exit(f"no suite rows in {args.suite}")
    seed = anchor_times(args.anchor, args.impl)
    design = design_times(args.design)
    print("| case | ours | seed | ours / seed |")
    print("|---|---|---|---|")
    pairs, behind = [], []
    for key, (spec, t) in ours.items():
        if key in seed:
            s, src = seed[key], ""
        elif key in design:
            s, src = design[key], " (DESIGN)"
        else:
            print(f"| {spec} | {fmt(t)} | | |")
            continue
        r = t / s
        pairs.append((t, s))
        if r >= 1.0:
            behind.append(spec)
        mark = f"**{r:.2f}**" if r >= 1.0 else f"{r:.2f}"
        print(f"| {spec} | {fmt(t)} | {s:.1f}{src} | {mark} |")
    if not pairs:
        sys.exit("no case has a seed figure")
    go, gs = geomean([p[0] for p in pairs]), geomean([p[1] for p in pairs])
    print(f"| geometric mean ({len(pairs)} cases) | {fmt(go)} | {fmt(gs)} | {go / gs:.2f} |")
    print()
    print(f"behind the seed: {', '.join(behind) if behind else 'none'}")
    print(f"geomean ratio {go / gs:.3f} (bar: at most 0.333)")


if __name__ == "__main__":
    main()
