"""Runs the seed anchor (anchor_qr_v2.py beside this file, unchanged) on the
benchmark cases whose spec `batch,n,cond,case` contains one of the given
substrings, so that a device call can afford the seed beside our engine.

usage: python3 anchor_subset.py SUBSTR... [-- IMPL...]   (IMPL default: seed)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import anchor_qr_v2  # noqa: E402


def main():
    args = sys.argv[1:]
    impls = ["seed"]
    if "--" in args:
        cut = args.index("--")
        args, impls = args[:cut], args[cut + 1:]
    spec = lambda b: f"{b[0]},{b[1]},{b[2]},{b[4]}"
    anchor_qr_v2.BENCH = [b for b in anchor_qr_v2.BENCH if any(s in spec(b) for s in args)]
    if not anchor_qr_v2.BENCH:
        sys.exit("no benchmark case matches " + " ".join(args))
    sys.argv = [sys.argv[0]] + impls
    anchor_qr_v2.main()


if __name__ == "__main__":
    main()
