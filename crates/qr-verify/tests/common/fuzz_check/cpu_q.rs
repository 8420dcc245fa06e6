//! Checks for `qr_cpu::CpuBackend`'s `orgqr_into`, `ormqr_into` (all four
//! [`ApplyQ`]) and `qr_into` on arbitrary small batches (`n <= 40`,
//! `k <= 40`, `batch <= 3`) under arbitrary tunings, so that the unblocked
//! and blocked paths of both operations run at these orders.
//!
//! Each matrix's reflectors are `geqrf`'s of a decoded matrix (any
//! magnitude, NaN and infinity included), arbitrary (`H` of any bit
//! pattern, `tau` anywhere: outside `[0, 2]`, NaN, huge, subnormal), or
//! `geqrf`'s with a few entries overwritten. The contract checked, per
//! matrix (qr-core's crate documentation and `Backend::orgqr_into`):
//! - nothing panics; buffers of the wrong length are `QrError::LengthMismatch`;
//! - `Info::NON_FINITE` exactly when `Reflectors::is_finite` is false, the
//!   result all NaN;
//! - otherwise `orgqr`: `Info::OK` with a finite `Q`, or `Info::OVERFLOW`
//!   with a NaN `Q`; `ormqr` with a finite `C`: the same; with a NaN or an
//!   infinity in `C`: `Info::OK` (it stays in the product, as in LAPACK);
//! - reflectors exactly as `geqrf` returned them for a factored matrix are
//!   never `OVERFLOW` (nor is a `C` with `amax <= 2^100` applied to them),
//!   and meet the gates of `qr_verify::q_gate` (`qerr` and `orth`; `ormqr`'s
//!   error where `2^-100 <= amax(C)`);
//! - `qr_into` is bit for bit `geqrf_into` then `orgqr_into` (`R` the upper
//!   triangle of `H`, `info` `geqrf`'s).

use qr_core::{
    ApplyQ, Backend, BatchMut, BatchRef, Info, QrError, Reflectors, Shape, Side, upper_triangle,
};
use qr_cpu::{CpuBackend, QTuning, Tuning};
use qr_verify::q_gate::{self, Applied, Metric, differing};

use super::cpu_geqrf::rect;
use super::decode::{Reader, SPECIALS};

/// Largest order the target draws.
pub const MAX_N: usize = 40;
/// Largest `k` (columns of `C` on the left, rows on the right).
pub const MAX_K: usize = 40;
/// Largest batch the target draws.
pub const MAX_BATCH: usize = 3;

/// Written into `orgqr`'s and `qr`'s outputs before the call: a signalling
/// NaN that no arithmetic produces, so an element never written is caught.
pub const POISON: u32 = 0x7fa0_dead;
/// Written into every `info` before the call.
pub const INFO_POISON: Info = Info(-99);

/// `C`'s magnitudes within which `ormqr` on `geqrf`'s reflectors must be
/// `OK` (`amax <= 2^100`) and meet its gate (`amax >= 2^-100` too: below,
/// subnormal rounding is absolute, not relative to `||C||`).
const C_GATED: (f32, f32) = (
    f32::from_bits((127 - 100) << 23),
    f32::from_bits((127 + 100) << 23),
);

/// Which buffer the input makes one element too long (misuse).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misuse {
    /// Every buffer has its right length.
    None,
    /// `Reflectors::new` with `h` one longer.
    H,
    /// `Reflectors::new` with `tau` one longer.
    Tau,
    /// `orgqr_into` with `q` one longer.
    Q,
    /// `orgqr_into` with `info` one longer.
    OrgqrInfo,
    /// `ormqr_into` with `c` one longer.
    C,
    /// `ormqr_into` with `info` one longer.
    OrmqrInfo,
    /// `qr_into` with `r` one longer.
    R,
}

/// A decoded input.
#[derive(Debug)]
pub struct Input {
    /// The batch shape.
    pub shape: Shape,
    /// Columns of `C` on the left, rows on the right.
    pub k: usize,
    /// The matrices `qr_into` factors (the ones the reflectors came from,
    /// where they came from `geqrf`).
    pub a: Vec<f32>,
    /// The reflectors: `H` ...
    pub h: Vec<f32>,
    /// ... and `tau`.
    pub tau: Vec<f32>,
    /// Per matrix: its reflectors are exactly those `geqrf` returned with
    /// `Info::OK`.
    pub from_geqrf: Vec<bool>,
    /// `C` for the left products, `n x k` per matrix, row-major; the right
    /// products take its transposes.
    pub c: Vec<f32>,
    /// Factorization tuning of the backend under test.
    pub tuning: Tuning,
    /// `orgqr` / `ormqr` tuning of the backend under test.
    pub q_tuning: QTuning,
    /// A buffer made the wrong length, if any.
    pub misuse: Misuse,
}

/// A `tau` from the whole range: any bit pattern, named values around and
/// outside `[0, 2]`, or a value inside it.
fn tau_value(r: &mut Reader<'_>) -> f32 {
    const TAUS: [f32; 8] = [0.0, 1.0, 2.0, -1.0, 2.5, 1.0e30, -0.0, 1.0e-40];
    match r.u8() % 4 {
        0 => r.f32_any(),
        1 => TAUS[r.below(TAUS.len())],
        2 => SPECIALS[r.below(SPECIALS.len())],
        _ => f32::from(r.u8()) / 128.0,
    }
}

/// Decodes bytes into an [`Input`].
pub fn decode(data: &[u8]) -> Input {
    let mut r = Reader::new(data);
    let batch = r.below(MAX_BATCH + 1);
    let n = r.below(MAX_N + 1);
    let k = r.below(MAX_K + 1);
    let tuning = Tuning {
        small_n: [0, 1, 7, 16, 48][r.below(5)],
        block: r.below(34),
        batch_parallel_min: r.below(4),
        batch_parallel_min_work: [0, 1 << 21][r.below(2)],
        par_update_min_cols: [0, 1, 8, 256][r.below(4)],
        panel_leaf: r.below(34),
        wide_block: r.below(34),
        wide_block_min_n: [0, 17, 40, usize::MAX][r.below(4)],
    };
    let q_tuning = QTuning {
        orgqr_small_n: [0, 1, 4, 16, 48][r.below(5)],
        orgqr_block: r.below(34),
        ormqr_small_n: [0, 1, 4, 16, 48][r.below(5)],
        ormqr_block: r.below(34),
        // Knobs added later keep their defaults, so that old corpus files
        // still decode to the same input.
        ..QTuning::default()
    };
    let misuse = match r.u8() {
        0xf9 => Misuse::H,
        0xfa => Misuse::Tau,
        0xfb => Misuse::Q,
        0xfc => Misuse::OrgqrInfo,
        0xfd => Misuse::C,
        0xfe => Misuse::OrmqrInfo,
        0xff => Misuse::R,
        _ => Misuse::None,
    };
    let shape = Shape::new(batch, n).unwrap();
    let one = Shape::new(1, n).unwrap();
    let geqrf = CpuBackend::new();
    let (mut a, mut h, mut tau) = (Vec::new(), Vec::new(), Vec::new());
    let mut from_geqrf = Vec::new();
    let mut c = Vec::new();
    for _ in 0..batch {
        let source = r.u8() % 4;
        let m = rect(&mut r, n, n);
        if source == 2 {
            h.extend(&m);
            tau.extend((0..n).map(|_| tau_value(&mut r)));
            from_geqrf.push(false);
        } else {
            let f = qr_core::geqrf(&geqrf, one, &m).unwrap();
            let (mut hm, mut tm) = (f.h, f.tau);
            let mut exact = f.info[0].is_ok();
            if source == 3 && n > 0 {
                for _ in 0..=r.below(4) {
                    // Position first, then value (an assignment would
                    // evaluate its right side first).
                    if r.u8() % 2 == 0 {
                        let at = r.below(n * n);
                        hm[at] = r.f32_any();
                    } else {
                        let at = r.below(n);
                        tm[at] = tau_value(&mut r);
                    }
                }
                exact = false;
            }
            h.extend(hm);
            tau.extend(tm);
            from_geqrf.push(exact);
        }
        a.extend(m);
        c.extend(rect(&mut r, n, k));
    }
    Input {
        shape,
        k,
        a,
        h,
        tau,
        from_geqrf,
        c,
        tuning,
        q_tuning,
        misuse,
    }
}

/// Decodes one input and checks it; panics on a contract violation.
pub fn check(data: &[u8]) {
    let input = decode(data);
    let backend =
        CpuBackend::with_tuning(input.tuning.clone()).with_q_tuning(input.q_tuning.clone());
    if input.misuse != Misuse::None {
        check_misuse(&backend, &input);
        return;
    }
    let Input {
        shape,
        k,
        ref h,
        ref tau,
        ..
    } = input;
    let f = Reflectors::new(shape, h, tau).expect("lengths match");
    check_orgqr(&backend, &input, f);
    for op in ApplyQ::ALL {
        check_ormqr(&backend, &input, f, op);
    }
    check_qr(&backend, shape, &input.a);
    assert_eq!(f.shape().n() * k * shape.batch(), input.c.len());
}

/// The buffer one element too long is an error naming it; nothing panics.
fn check_misuse(backend: &CpuBackend, input: &Input) {
    let (shape, k) = (input.shape, input.k);
    let (mut h, mut tau) = (input.h.clone(), input.tau.clone());
    let extra = |v: &mut Vec<f32>, m: Misuse| {
        if input.misuse == m {
            v.push(0.0);
        }
    };
    extra(&mut h, Misuse::H);
    extra(&mut tau, Misuse::Tau);
    let expect = |what: &str, result: Result<(), QrError>| match result {
        Err(QrError::LengthMismatch { what: w, .. }) if w == what => {}
        other => panic!("{:?} one too long: {other:?}", input.misuse),
    };
    let f = match Reflectors::new(shape, &h, &tau) {
        Ok(f) => f,
        Err(e) => {
            let what = if input.misuse == Misuse::H {
                "h"
            } else {
                "tau"
            };
            return expect(what, Err(e));
        }
    };
    assert!(
        !matches!(input.misuse, Misuse::H | Misuse::Tau),
        "Reflectors::new took a buffer one too long"
    );
    let grow = |len: usize, m: Misuse| len + usize::from(input.misuse == m);
    let mut q = vec![0.0f32; grow(shape.a_len(), Misuse::Q)];
    let mut info = vec![INFO_POISON; grow(shape.info_len(), Misuse::OrgqrInfo)];
    let orgqr = backend.orgqr_into(f, &mut q, &mut info);
    let mut c = input.c.clone();
    c.resize(grow(c.len(), Misuse::C), 0.0);
    let mut info = vec![INFO_POISON; grow(shape.info_len(), Misuse::OrmqrInfo)];
    let ormqr = backend.ormqr_into(f, ApplyQ::QT_LEFT, k, &mut c, &mut info);
    let mut q = vec![0.0f32; shape.a_len()];
    let mut r = vec![0.0f32; grow(shape.a_len(), Misuse::R)];
    let mut info = vec![INFO_POISON; shape.info_len()];
    let a = BatchRef::new(shape, &input.a).unwrap();
    let qr = backend.qr_into(a, &mut q, &mut r, &mut info);
    match input.misuse {
        Misuse::Q => expect("q", orgqr),
        Misuse::OrgqrInfo => expect("info", orgqr),
        Misuse::C => expect("c", ormqr),
        Misuse::OrmqrInfo => expect("info", ormqr),
        Misuse::R => expect("r", qr),
        _ => unreachable!(),
    }
}

fn all_nan(x: &[f32]) -> bool {
    x.iter().all(|v| v.is_nan())
}

fn all_finite(x: &[f32]) -> bool {
    x.iter().all(|v| v.is_finite())
}

fn amax(x: &[f32]) -> f32 {
    x.iter().fold(0.0f32, |m, v| m.max(v.abs()))
}

fn check_orgqr(backend: &CpuBackend, input: &Input, f: Reflectors<'_>) {
    let shape = input.shape;
    let n = shape.n();
    let mut q = vec![f32::from_bits(POISON); shape.a_len()];
    let mut info = vec![INFO_POISON; shape.info_len()];
    backend
        .orgqr_into(f, &mut q, &mut info)
        .unwrap_or_else(|e| panic!("valid orgqr failed: {e}"));
    if n == 0 {
        assert!(info.iter().all(|i| i.is_ok()), "orgqr, n = 0: {info:?}");
        return;
    }
    assert!(
        q.iter().all(|x| x.to_bits() != POISON),
        "orgqr left an element of Q unwritten"
    );
    for (b, (hb, tb)) in f.matrices().enumerate() {
        let qb = &q[b * n * n..(b + 1) * n * n];
        let what = format!("orgqr, matrix {b} of {shape}");
        status(&what, hb, tb, n, true, info[b], qb);
        if input.from_geqrf[b] {
            assert_eq!(info[b], Info::OK, "{what}: geqrf's reflectors");
        }
    }
    let report = q_gate::check_orgqr(f, &q, &info).expect("lengths match");
    gated("orgqr", &report, &input.from_geqrf);
}

fn check_ormqr(backend: &CpuBackend, input: &Input, f: Reflectors<'_>, op: ApplyQ) {
    let (shape, k) = (input.shape, input.k);
    let n = shape.n();
    let len = n * k;
    let c: Vec<f32> = match op.side {
        Side::Left => input.c.clone(),
        // C_right = C_left^T per matrix: k x n.
        Side::Right => input
            .c
            .chunks_exact(len.max(1))
            .flat_map(|m| (0..k).flat_map(move |j| (0..n).map(move |i| m[i * k + j])))
            .collect(),
    };
    let mut out = c.clone();
    let mut info = vec![INFO_POISON; shape.info_len()];
    backend
        .ormqr_into(f, op, k, &mut out, &mut info)
        .unwrap_or_else(|e| panic!("valid ormqr ({op}) failed: {e}"));
    if n == 0 {
        assert!(info.iter().all(|i| i.is_ok()), "ormqr, n = 0: {info:?}");
        return;
    }
    let mut gate_me = input.from_geqrf.clone();
    for (b, (hb, tb)) in f.matrices().enumerate() {
        let (cb, ob) = (&c[b * len..(b + 1) * len], &out[b * len..(b + 1) * len]);
        let what = format!("ormqr ({op}), matrix {b} of {shape}, k = {k}");
        status(&what, hb, tb, n, all_finite(cb), info[b], ob);
        let moderate = all_finite(cb) && amax(cb) <= C_GATED.1;
        if input.from_geqrf[b] && moderate {
            assert_eq!(
                info[b],
                Info::OK,
                "{what}: geqrf's reflectors, amax(C) {:e}",
                amax(cb)
            );
        }
        gate_me[b] &= moderate && amax(cb) >= C_GATED.0;
    }
    let applied = [Applied {
        op,
        out: &out,
        info: &info,
    }];
    let report = q_gate::check_ormqr(f, k, &c, &applied).expect("lengths match");
    if k > 0 {
        gated(&format!("ormqr ({op})"), &report, &gate_me);
    }
}

/// One matrix's `info` against its reflectors and its result `res`.
/// `input_finite`: the operand the result was computed from (`C` for
/// `ormqr`; `orgqr` has none) is finite.
fn status(
    what: &str,
    h: &[f32],
    tau: &[f32],
    n: usize,
    input_finite: bool,
    info: Info,
    res: &[f32],
) {
    if !Reflectors::is_finite(h, tau, n) {
        assert_eq!(info, Info::NON_FINITE, "{what}: non-finite reflectors");
        assert!(all_nan(res), "{what}: NON_FINITE result must be NaN");
        return;
    }
    if !input_finite {
        assert_eq!(info, Info::OK, "{what}: a NaN in C is not an info");
        return;
    }
    match info {
        Info::OK => assert!(all_finite(res), "{what}: Info::OK with a non-finite result"),
        Info::OVERFLOW => assert!(all_nan(res), "{what}: OVERFLOW result must be NaN"),
        other => panic!("{what}: finite reflectors gave {other:?}"),
    }
}

/// Every matrix marked in `which` meets the contract's gate of each metric.
fn gated(what: &str, report: &q_gate::OpReport, which: &[bool]) {
    for (b, (m, &on)) in report.matrices.iter().zip(which).enumerate() {
        if !on {
            continue;
        }
        assert_eq!(
            m.values.len(),
            report.metrics.len(),
            "{what}, matrix {b}: not measured"
        );
        for (metric, &v) in report.metrics.iter().zip(&m.values) {
            assert!(
                v <= Metric::gate(*metric),
                "{what}, matrix {b}: {} = {v} above its gate",
                metric.name()
            );
        }
    }
}

/// `qr_into` against `geqrf_into` then `orgqr_into` on the same backend.
fn check_qr(backend: &CpuBackend, shape: Shape, a: &[f32]) {
    let view = BatchRef::new(shape, a).unwrap();
    let (mut h, mut tau) = (vec![0.0f32; shape.a_len()], vec![0.0f32; shape.tau_len()]);
    let mut info = vec![INFO_POISON; shape.info_len()];
    let out = BatchMut::new(shape, &mut h, &mut tau, &mut info).unwrap();
    backend.geqrf_into(view, out).expect("valid geqrf");
    let f = Reflectors::new(shape, &h, &tau).unwrap();
    let mut q = vec![f32::from_bits(POISON); shape.a_len()];
    let mut q_info = vec![INFO_POISON; shape.info_len()];
    backend
        .orgqr_into(f, &mut q, &mut q_info)
        .expect("valid orgqr");
    let mut r = vec![0.0f32; shape.a_len()];
    upper_triangle(shape, &h, &info, &mut r);

    let mut qq = vec![f32::from_bits(POISON); shape.a_len()];
    let mut qr = vec![f32::from_bits(POISON); shape.a_len()];
    let mut qr_info = vec![INFO_POISON; shape.info_len()];
    backend
        .qr_into(view, &mut qq, &mut qr, &mut qr_info)
        .unwrap_or_else(|e| panic!("valid qr failed: {e}"));
    assert_eq!(qr_info, info, "qr's info is not geqrf's");
    assert_eq!(differing(&qq, &q), 0, "qr's Q is not orgqr's of geqrf's");
    assert_eq!(
        differing(&qr, &r),
        0,
        "qr's R is not geqrf's upper triangle"
    );
    for (b, i) in info.iter().enumerate() {
        let n = shape.n();
        if i.is_ok() && n > 0 {
            assert!(
                all_finite(&qq[b * n * n..(b + 1) * n * n]),
                "qr, matrix {b} of {shape}: OK with a non-finite Q"
            );
        }
    }
}
