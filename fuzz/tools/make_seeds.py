#!/usr/bin/env python3
"""Writes the hand-made seed corpus of every fuzz target into fuzz/corpus/.

The byte layouts follow crates/qr-verify/tests/common/fuzz_check/*.rs (the
decoders the targets and the replay test share). Seeds the fuzzer found are
added beside these by `cargo fuzz cmin`; this script only (re)writes its own.
"""
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus")


def write(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(bytes(data))


def small(v):
    """Reader::f32_any tag 4: v / 16 for a signed byte v."""
    return [4, v & 0xff]


def special(i):
    """Reader::f32_any tag 1: SPECIALS[i] (4 NaN, 5 sNaN, 7 inf, 9 MAX, 12 min subnormal)."""
    return [1, i]


def raw(bits):
    return [0] + list(struct.pack("<I", bits))


# cpu_geqrf: batch, n, small_n index (0,1,7,16,33,64), block, batch_parallel_min,
# par_update_min_cols index, panel_leaf, wide_block, wide_block_min_n index
# (0, 17, 40, never), output-shape byte, then per matrix:
# structure, exponent (i8), grading, step, seed (u64), override count, overrides.
def cpu(name, batch, n, matrices, small_n=5, block=0, bpm=2, pumc=3, leaf=8, wide=0, wide_min=3, out=0):
    data = [batch, n, small_n, block, bpm, pumc, leaf, wide, wide_min, out]
    for m in matrices:
        data += m
    write("cpu_geqrf", name, data)


def position(pos, count):
    """Reader::below(count): one byte up to 256 values, else four."""
    return [pos] if count <= 256 else list(struct.pack("<I", pos))


def mat(structure=0, exponent=0, grading=0, step=0, seed=1, overrides=(), n=0):
    """One matrix; `n` is only needed when there are overrides."""
    data = [structure, exponent & 0xff, grading, step] + list(struct.pack("<Q", seed))
    data.append(len(overrides))
    for pos, value in overrides:
        data += position(pos, n * n) + value
    return data


cpu("dense_n5", 1, 5, [mat()])
cpu("dense_n64_blocked_nb8", 2, 64, [mat(seed=2), mat(seed=3)], small_n=0, block=8)
cpu("dense_n33_nb32", 1, 33, [mat(seed=4)], small_n=3, block=32, pumc=1)
cpu("dense_n50_recursive_panel", 1, 50, [mat(seed=6)], small_n=0, block=32, leaf=3)
cpu("dense_n45_wide_block", 2, 45, [mat(seed=7), mat(seed=8)], small_n=0, block=4, wide=13, wide_min=2)
cpu("dense_n17_nb1_inner_parallel", 1, 17, [mat(seed=5)], small_n=0, block=1, bpm=3, pumc=1)
cpu("upper_n9", 1, 9, [mat(structure=1)])
cpu("diagonal_n12_blocked", 1, 12, [mat(structure=2)], small_n=0, block=4)
cpu("zero_n8", 2, 8, [mat(structure=3), mat(structure=3)], small_n=0, block=3)
cpu("identity_n7", 1, 7, [mat(structure=4)])
cpu("rank_one_n10", 1, 10, [mat(structure=5)], small_n=0, block=4)
cpu("tridiagonal_n11", 1, 11, [mat(structure=6)])
cpu("near_collinear_n16", 1, 16, [mat(structure=7)], small_n=0, block=5)
cpu("n1", 3, 1, [mat(), mat(exponent=-128), mat(exponent=127)])
cpu("n0_batch3", 3, 0, [])
cpu("batch0_n6", 0, 6, [])
cpu("nan_in_second_of_three", 3, 6, [mat(), mat(overrides=[(7, special(4))], n=6), mat(seed=9)])
cpu("signalling_nan", 1, 4, [mat(overrides=[(0, special(5))], n=4)])
cpu("inf_blocked", 2, 20, [mat(overrides=[(33, special(7))], n=20), mat()], small_n=0, block=6)
cpu("scaled_1e30", 1, 24, [mat(exponent=100)], small_n=0, block=8)
cpu("scaled_1e-30", 1, 24, [mat(exponent=-100)], small_n=0, block=8)
cpu("subnormal_only", 1, 6, [mat(exponent=-128)])
cpu("subnormal_entries_in_normal", 1, 6, [mat(overrides=[(3, [2, 5, 0, 0, 0, 1]), (10, special(12))], n=6)])
cpu("near_max", 1, 3, [mat(exponent=126)])
cpu("max_entries", 1, 2, [mat(structure=3, overrides=[(0, special(9)), (2, special(9))], n=2)])
# Finite matrices whose R does not fit f32: Info::OVERFLOW beside normal ones.
MAX, ONE = special(9), small(16)
cpu("overflow_beside_normal", 3, 2, [mat(), mat(structure=3, overrides=[(0, MAX), (1, ONE), (2, MAX), (3, ONE)], n=2), mat(seed=10)])
cpu("overflow_blocked", 2, 20, [mat(exponent=127, seed=11), mat()], small_n=0, block=6)
# Finite matrices whose f32 intermediates overflow while R fits (issue 30):
# Info::OK, factored again scaled by a power of two. Entries up to 2^127 and
# 2^126 (column norms about 0.8 and 0.6 of f32::MAX at n = 8 and 16).
cpu("near_max_over_4_n8", 2, 8, [mat(exponent=127, seed=12), mat(exponent=127, seed=13)])
cpu("near_max_over_4_n16_blocked", 2, 16, [mat(exponent=126, seed=14), mat(exponent=127, seed=15)], small_n=0, block=4)


def normal(v):
    """Reader::f32_any tag 3: a normal with an 8-bit mantissa, nearest to v."""
    import math
    e = math.floor(math.log2(abs(v)))
    m = min(255, round((abs(v) / 2.0 ** e - 1.0) * 256))
    return [3, e + 127, m, 1 if v < 0 else 0]


FMAX = 3.4028234663852886e38
# A = Q R, Q a rotation, |R| <= 0.9 MAX: the second column's norm is 1.03 MAX.
rot = [normal(0.4 * FMAX), normal(0.42 * FMAX), normal(0.3 * FMAX), normal(0.94 * FMAX)]
cpu("column_norm_above_max_r_fits", 1, 2, [mat(structure=3, overrides=list(enumerate(rot)), n=2)])
# R[0][1] = -1.13 MAX behind a first column that fits: OVERFLOW.
cpu("overflow_in_second_column", 1, 2, [mat(structure=3, overrides=[(0, ONE), (1, normal(0.8 * FMAX)), (2, ONE), (3, normal(0.8 * FMAX))], n=2)])
# The scaled retry must keep A[1][0] = 2^-149 non-zero (tau[0] = 2).
cpu("scaled_retry_keeps_subnormal", 1, 3, [mat(structure=4, overrides=[(3, special(12))] + [(4 + i, v) for i, v in enumerate(rot[:2])] + [(7 + i, v) for i, v in enumerate(rot[2:])], n=3)], small_n=0, block=1)
cpu("column_graded", 1, 20, [mat(grading=1, step=7)], small_n=0, block=4)
cpu("row_graded", 1, 20, [mat(grading=2, step=5)])
cpu("entry_spread", 2, 30, [mat(grading=3), mat(grading=3, exponent=90)], small_n=0, block=7)
cpu("outputs_one_more_matrix", 2, 4, [mat(), mat()], out=0xFE)
cpu("outputs_larger_order", 1, 4, [mat()], out=0xFF)

# cpu_q: batch, n, k, small_n index (0,1,7,16,48), block, batch_parallel_min,
# par_update_min_cols index, panel_leaf, wide_block, wide_block_min_n index,
# orgqr_small_n index (0,1,4,16,48), orgqr_block, ormqr_small_n index,
# ormqr_block, misuse byte (0xf9..0xff), then per matrix: source (0, 1:
# geqrf's reflectors; 2: arbitrary H and tau; 3: geqrf's, overwritten), the
# matrix (as `mat`), the n taus (source 2) or the overwrites (source 3), C
# (n x k, as `mat`).
def q(name, batch, n, k, matrices, small_n=4, block=8, bpm=2, pumc=3, leaf=8, wide=0, wide_min=3,
      org_small=4, org_block=8, orm_small=4, orm_block=8, misuse=0):
    data = [batch, n, k, small_n, block, bpm, pumc, leaf, wide, wide_min, org_small, org_block, orm_small, orm_block, misuse]
    for m in matrices:
        data += m
    write("cpu_q", name, data)


def qm(source=0, a=None, taus=(), overwrites=(), c=None):
    """One matrix of a cpu_q seed; `overwrites`: (is_tau, position, value bytes)."""
    data = [source] + (a if a is not None else mat())
    for t in taus:
        data += t
    if source == 3:
        data.append(max(0, len(overwrites) - 1))
        for is_tau, pos, value in overwrites:
            data += [1 if is_tau else 0, pos] + (value if is_tau else value)
    return data + (c if c is not None else mat(seed=77))


def tau_in(v):
    """tau_value tag 3: v / 128 for a byte v (0 to 1.99)."""
    return [3, v]


def tau_named(i):
    """tau_value tag 1: [0, 1, 2, -1, 2.5, 1e30, -0, 1e-40][i]."""
    return [1, i]


def tau_special(i):
    """tau_value tag 2: SPECIALS[i]."""
    return [2, i]


q("geqrf_n5_k3", 2, 5, 3, [qm(), qm(a=mat(seed=3), c=mat(seed=4))])
q("geqrf_n40_k17_blocked", 1, 40, 17, [qm(a=mat(seed=5), c=mat(seed=6))], small_n=0, org_small=0, org_block=8, orm_small=0, orm_block=5, pumc=1)
q("geqrf_n33_k40_wide_blocks", 2, 33, 40, [qm(a=mat(seed=7)), qm(a=mat(structure=5, seed=8))], small_n=0, org_small=1, org_block=33, orm_small=1, orm_block=0)
q("geqrf_n24_inner_parallel", 1, 24, 9, [qm(a=mat(seed=9))], bpm=3, pumc=1, org_small=0, org_block=4, orm_small=0, orm_block=3)
q("arbitrary_taus_n6", 1, 6, 4, [qm(source=2, taus=[tau_in(0), tau_in(255), tau_named(3), tau_named(4), tau_named(5), tau_named(7)])])
q("arbitrary_taus_blocked_n20", 2, 20, 6, [qm(source=2, taus=[tau_named(i % 8) for i in range(20)]), qm(source=2, a=mat(exponent=120), taus=[tau_named(5)] * 20)], org_small=0, org_block=6, orm_small=0, orm_block=6)
q("arbitrary_nan_tau", 2, 4, 4, [qm(source=2, taus=[tau_in(64), tau_special(4), tau_in(0), tau_in(1)]), qm()])
q("nan_below_diagonal", 2, 5, 3, [qm(source=3, overwrites=[(False, 11, special(4))]), qm()])
q("nan_in_r_part_is_fine", 1, 5, 3, [qm(source=3, overwrites=[(False, 0, special(4)), (False, 7, special(7))])])
q("inf_tau_overwrite", 1, 5, 3, [qm(source=3, overwrites=[(True, 2, tau_special(7))])])
q("subnormal_tau_and_v", 1, 5, 3, [qm(source=3, overwrites=[(True, 1, tau_named(7)), (False, 20, special(12))])])
q("nan_in_c", 2, 6, 5, [qm(c=mat(overrides=[(3, special(4))], n=6)), qm(c=mat(overrides=[(0, special(7))], n=6))])
q("huge_c", 1, 6, 5, [qm(c=mat(exponent=127))])
q("max_c_blocked", 1, 30, 4, [qm(c=mat(structure=3, overrides=[(i, special(9)) for i in range(0, 120, 31)], n=30))], org_small=0, orm_small=0, orm_block=4)
q("tiny_c", 1, 6, 5, [qm(c=mat(exponent=-128))])
q("non_finite_a", 2, 5, 2, [qm(a=mat(overrides=[(6, special(7))], n=5)), qm()])
q("overflowing_a", 1, 2, 2, [qm(a=mat(structure=3, overrides=[(0, MAX), (1, ONE), (2, MAX), (3, ONE)], n=2))])
q("huge_a_scaled_retry", 1, 8, 3, [qm(a=mat(exponent=127, seed=12))])
q("k0", 2, 7, 0, [qm(), qm(source=2, taus=[tau_special(4)] * 7)])
q("n0", 2, 0, 5, [qm(), qm()])
q("batch0", 0, 5, 5, [])
q("n1", 2, 1, 3, [qm(), qm(source=2, taus=[tau_named(4)])])
for i, m in enumerate(["h", "tau", "q", "orgqr_info", "c", "ormqr_info", "r"]):
    q("misuse_" + m, 2, 3, 2, [qm(), qm()], misuse=0xf9 + i)
q("misuse_c_empty_batch", 0, 3, 2, [], misuse=0xfd)

# gate_check: batch, n, derived byte (0 = arbitrary H and tau), per matrix n*n
# f32_finite (+ n*n and n f32_any when arbitrary), override count,
# overrides (value, buffer, position), length byte.
def gate(name, batch, n, derived, entries, overrides=(), length=0):
    data = [batch, n, 1 if derived else 0]
    for e in entries:
        data += e
    data.append(len(overrides))
    for value, buf, pos in overrides:
        data += value + [buf, pos]
    data.append(length)
    write("gate_check", name, data)


def entries(k, base=1):
    return sum((small((base * 7 + 13 * i) % 100 - 50) for i in range(k)), [])


gate("derived_n4", 1, 4, True, [entries(16)])
gate("derived_n8_batch2", 2, 8, True, [entries(64), entries(64, 3)])
gate("derived_n1", 1, 1, True, [small(3)])
gate("derived_zero", 1, 5, True, [])
gate("derived_perturbed_r", 1, 4, True, [entries(16)], overrides=[(small(40), 1, 1)])
gate("derived_perturbed_tau", 1, 4, True, [entries(16)], overrides=[(small(2), 2, 0)])
gate("derived_nan_h", 1, 4, True, [entries(16)], overrides=[(special(4), 1, 9)])
gate("derived_inf_a", 1, 3, True, [entries(9)], overrides=[(special(7), 0, 4)])
gate("derived_max_a", 1, 3, True, [entries(9)], overrides=[(special(9), 0, 4)])
gate("arbitrary_n3", 1, 3, False, [entries(9) + entries(9, 2) + entries(3, 5)])
# A = H = I (entries 16/16), tau = 0: the exact factorization of I.
one, zero = small(16), small(0)
gate("arbitrary_identity", 1, 2, False, [one + zero + zero + one + one + zero + zero + one + zero + zero])
gate("short_a", 1, 3, True, [entries(9)], length=0xFD)
gate("long_h", 1, 3, True, [entries(9)], length=0xFE)
gate("short_tau", 2, 2, True, [entries(4), entries(4)], length=0xFF)
gate("empty_n0", 3, 0, True, [])
gate("empty_batch", 0, 5, True, [])
gate("derived_n24", 1, 24, True, [entries(576)])

# parsers: plain strings.
for i, text in enumerate([
    "640,512,2,dense", "16,512,0,", "16,512,0,rankdef", "4,8,1,mixed", "3,4,0,lapack-huge",
    "2,5,1e300,dense", "2,5,-1,dense", "2,5,NaN,dense", "2,5,inf,upper", "2,5,-0,band",
    "18446744073709551615,2,1,dense", "4611686018427387904,0,0,dense", "0,0,0,dense",
    "dense", "lapack-tiny", "tests", "benchmarks", "640x512", " 2 , 3 , 1 , band ",
    "2,3,1,band,", "", "1,1,0,diagonal", "4,6,2,clustered", "8,8,0,nearrank", "3,9,4,rowscale",
    "2,7,3,nearcollinear", "2,6,0,lapack-diag", "2,6,0,lapack-upper", "2,6,0,lapack-lower",
    "2,6,0,lapack-cond2", "2,6,0,lapack-condsqrt", "2,6,0,lapack-condbig", "3,3,1,lapack-tiny",
    "1,64,1e-320,dense", "+3,+4,+1,dense", "2,2,1.5e3,upper",
]):
    write("parsers", "spec_%02d" % i, text.encode())

# parsers: `qr bench --shapes` arguments (qr_verify::parse_shape).
for i, text in enumerate([
    "40x176", " 1x2048 ", "0x0", "5x0", "0x9", "+3x+4", "3x", "x3", "3x-1", "3X4",
    "1x18446744073709551615", "18446744073709551615x0", "4611686018427387904x0",
    "2305843009213693951x0", "2x2147483648", "1x1518500249", "1x4294967296",
]):
    write("parsers", "shape_%02d" % i, text.encode())

# Found by the fuzzer (then rewritten in the current layout): two empty
# batches of different orders have equal (empty) buffers.
cpu("empty_batches_of_two_orders", 0, 6, [], out=0xFF)
