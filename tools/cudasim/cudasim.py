"""Builds a qr-gpu kernel family for the host emulator (cudasim.h).

usage: python3 cudasim.py FAMILY HARNESS OUT_BINARY [-DNAME=VALUE ...]

FAMILY is a kernel family of crates/qr-gpu/src/kernels (the family named in
the `family:` of a launcher's `SOURCE`, in kernels/<folder>/<module>.rs; its
.cu files, in that folder, are joined behind prelude.cu in the order
`SOURCE` lists them, as the engine does); HARNESS a C++ file that calls
its entries through sim_launch. Shared-memory declarations are rewritten:
`extern __shared__ T s[];` becomes a pointer into the block's emulated
dynamic shared memory, other `__shared__` locals become statics (one block
runs at a time).
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "..", "..", "crates", "qr-gpu", "src", "kernels")


def translate(src):
    attr = r"(?:__align__\(\d+\)\s+|__attribute__\(\(aligned\(\d+\)\)\)\s+)?"
    src = re.sub(r"extern\s+__shared__\s+" + attr + r"(\w+)\s+(\w+)\s*\[\s*\]\s*;",
                 r"\1* \2 = reinterpret_cast<\1*>(sim_dyn_smem);", src)
    return src.replace("__shared__", "static")


def launcher(family):
    """The folder under KERNELS and the text of the launcher whose `SOURCE`
    is `family`'s (`family: "NAME"`)."""
    for folder in sorted(os.listdir(KERNELS)):
        path = os.path.join(KERNELS, folder)
        if not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            if name.endswith(".rs"):
                text = open(os.path.join(path, name)).read()
                if re.search(r'family:\s*"%s"' % re.escape(family), text):
                    return folder, text
    sys.exit("no launcher in %s names the family %s" % (KERNELS, family))


def sources(family):
    """The folder of `family` and its .cu files, in the order its launcher
    joins them behind prelude.cu: the `include_str!` arguments of
    `SOURCE`'s `source: concat!(...)`, but the leading `../prelude.cu`."""
    folder, text = launcher(family)
    start = text.find("source: concat!(")
    if start < 0:
        sys.exit("%s: no `source: concat!(` found" % family)
    depth, i = 0, start + len("source: concat!")
    for i in range(i, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            break
    args = text[start + len("source: concat!("):i]
    include = r'include_str!\(\s*"([^"]+)"\s*\)'
    files = re.findall(include, args)
    # Anything else among the arguments (a literal, a macro) would be
    # text of the engine's source that this join leaves out.
    rest = re.sub(include, "", args).replace(",", "").strip()
    if rest or not files or files[0] != "../prelude.cu" or any("/" in f for f in files[1:]):
        sys.exit("%s: expected ../prelude.cu, then the family's own files: %s"
                 % (family, files))
    return folder, files[1:]


def build(family, harness, out, defines):
    """Builds `harness` with `family` (several joined by "+", each behind
    the one prelude, as a driver that launches kernels of both runs them)."""
    src = open(os.path.join(KERNELS, "prelude.cu")).read()
    for fam in family.split("+"):
        folder, names = sources(fam)
        for name in names:
            src += open(os.path.join(KERNELS, folder, name)).read()
    unit = os.path.join(os.path.dirname(os.path.abspath(out)), family.replace("+", "_") + "_sim.cpp")
    with open(unit, "w") as f:
        f.write('#define CUDASIM 1\n#include "cudasim.h"\n')
        f.write(translate(src))
        f.write('\n#include "%s"\n' % os.path.abspath(harness))
    cmd = ["g++", "-std=c++20", "-O2", "-pthread", "-ffp-contract=off", "-Wno-unknown-pragmas",
           "-Wno-unused-variable", "-Wno-unused-but-set-variable", "-I", HERE, *defines,
           unit, "-o", out]
    subprocess.run(cmd, check=True)


def built(directory, family, harness, defines):
    """The harness binary of `family` with `defines` in `directory`, built
    on first use (named by the family and the defines' values)."""
    name = family + "_" + "_".join(x.split("=", 1)[1] for x in defines)
    binary = os.path.join(directory, name)
    if not os.path.exists(binary):
        build(family, os.path.join(HERE, harness), binary, defines)
    return binary


def run(binary, args, arrays, seed=0):
    """Runs a harness: `arrays` (the first two int32 batch and n, the rest
    float32) written to its input file, `args` before the input and output
    paths, threads scheduled with CUDASIM_SEED = `seed`; returns the output
    file's bytes."""
    import numpy as np

    with tempfile.TemporaryDirectory() as d:
        fin, fout = os.path.join(d, "in"), os.path.join(d, "out")
        with open(fin, "wb") as f:
            f.write(np.array(arrays[:2], dtype=np.int32).tobytes())
            for x in arrays[2:]:
                f.write(np.ascontiguousarray(x, dtype=np.float32).tobytes())
        env = dict(os.environ, CUDASIM_SEED=str(seed))
        subprocess.run([binary, *map(str, args), fin, fout], check=True, env=env)
        with open(fout, "rb") as f:
            return f.read()


def take(raw, shapes):
    """Splits `raw` into arrays of `shapes`, each (shape, dtype), in order."""
    import numpy as np

    out, o = [], 0
    for shape, dt in shapes:
        count = int(np.prod(shape))
        out.append(np.frombuffer(raw, dt, count, offset=o).reshape(shape))
        o += count * np.dtype(dt).itemsize
    return out


# float32's unit roundoff, the gate's unit.
EPS = 2.0 ** -23


def reflectors(h, tau):
    """V (unit lower) and Q = H_0 .. H_{w-1} (rows x rows, float64) of a
    factored panel `h` (rows x w: R on and above the diagonal, the
    reflectors below) and its `tau`."""
    import numpy as np

    h = np.asarray(h, dtype=np.float64)
    rows, w = h.shape
    vv = np.tril(h, -1)
    vv[np.arange(w), np.arange(w)] = 1.0
    q = np.eye(rows)
    for j in reversed(range(w)):
        q -= float(tau[j]) * np.outer(vv[:, j], vv[:, j] @ q)
    return vv, q


def gate(a, h, tau, q=None):
    """The project's scaled residual and orthogonality (float64) of the
    factorization `h`, `tau` of the panel `a` (rows x w); `q`: its
    reflectors' product where the caller has it."""
    import numpy as np

    if q is None:
        _, q = reflectors(h, tau)
    rows = q.shape[0]
    ad = np.asarray(a, dtype=np.float64)
    na = max(np.abs(ad).sum(axis=0).max(), 1e-300)
    sfr = np.abs(np.triu(np.asarray(h, dtype=np.float64)) - q.T @ ad).sum(axis=0).max() / (
        rows * EPS * na)
    orth = np.abs(q.T @ q - np.eye(rows)).sum(axis=0).max() / (rows * EPS)
    return sfr, orth


def report(summary, failures):
    """Prints the summary line and every failure, and exits non-zero on any."""
    print(summary)
    for f in failures:
        print("FAIL", f)
    print("failures:", len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    build(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
