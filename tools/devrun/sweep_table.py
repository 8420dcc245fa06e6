"""Tables of a `bench_suite --sweep` log, one per knob (the knob's words with
its values taken out), a row per case, a column per setting, the fastest
time of each row in bold; the form of docs/PERF.md's tables.

    python3 tools/devrun/sweep_table.py SWEEP.txt
"""
import re
import sys


def family(knob):
    """The knob without its settings, and the settings."""
    words = knob.split()
    value = lambda w: re.fullmatch(r"-?\d+(\.\d+)?|true|false", w) is not None
    return " ".join("*" if value(w) else w for w in words), " ".join(w for w in words if value(w))


def main(path):
    tables = {}
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("case", "---"):
            continue
        case, knob, _plan, us = cells
        name, setting = family(knob)
        try:
            t = float(us)
        except ValueError:
            t = None  # "not run"
        table = tables.setdefault(name, {"settings": [], "rows": {}})
        if setting not in table["settings"]:
            table["settings"].append(setting)
        table["rows"].setdefault(case, {})[setting] = t
    for name, table in tables.items():
        print(f"### {name}\n")
        print("| case | " + " | ".join(table["settings"]) + " |")
        print("|---|" + "---|" * len(table["settings"]))
        for case, times in table["rows"].items():
            best = min((t for t in times.values() if t is not None), default=None)
            cells = []
            for s in table["settings"]:
                t = times.get(s)
                cells.append("" if t is None else (f"**{t:.1f}**" if t == best else f"{t:.1f}"))
            print(f"| {case} | " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
