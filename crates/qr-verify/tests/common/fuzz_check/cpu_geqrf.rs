//! Checks for `qr_cpu::CpuBackend` on arbitrary small batches (n <= 64,
//! batch <= 4) of arbitrary `f32` bit patterns, under arbitrary tunings so
//! that the blocked path is reached at these small orders.
//!
//! The contract checked, per matrix (docs/RELIABILITY.md, "Magnitude
//! regimes"):
//! - any NaN or infinity: `Info::NON_FINITE`, `H` and `tau` all NaN;
//! - finite, with a first column of 2-norm above `f32::MAX` (then
//!   `|R_00|` is): `Info::OVERFLOW`, `H` and `tau` all NaN; with every
//!   column's 2-norm below `f32::MAX` (then every `|R_ij|` is):
//!   `Info::OK` under the rules below, however the `f32` intermediates
//!   fare; otherwise either;
//! - otherwise `Info::OK`, every output written, `tau` in `[0, 2]`,
//!   `tau[n-1] = 0`, `tau[j] = 0` leaves its stored reflector zero,
//!   `tau[0] = 0` exactly when `A[1.., 0]` is zero, an upper-triangular `A`
//!   comes back unchanged with `tau = 0`; and by `amax = max |a_ij|`:
//!   - `amax = 0`: `H = 0`, `tau = 0`;
//!   - `2^-112 <= amax <= 2^112` (beyond the contract's "1e-30s to 1e+30s"): the
//!     gate, as qr-verify computes it;
//!   - `amax < 2^-112` (subnormal-only and near-subnormal matrices): the
//!     orthogonality gate, and the residual gate measured against
//!     `max(||A||_1, 2^-112)`, because `f32` subnormals carry an absolute
//!     rounding error of `2^-150` that no relative bound can absorb;
//!   - `amax > 2^112`: the gate too; an `Info::OK` output is always finite.

use qr_core::{Backend, BatchMut, BatchRef, Info, QrError, Shape};
use qr_cpu::{CpuBackend, Tuning};
use qr_verify::gate::{self, ORTH_GATE, SFR_GATE};

use super::decode::{Reader, SplitMix};

/// Largest order and batch the target draws.
pub const MAX_N: usize = 64;
/// Largest batch the target draws.
pub const MAX_BATCH: usize = 4;

/// Below this `amax` (2^-112, about 1.9e-34) a matrix is "tiny": see the
/// module documentation. Above it the subnormal rounding error `2^-150` is
/// below `2^-38` of `||A||`, far inside the gate's `20 n eps`; LAPACK's own
/// tiny test type (norm about 4.9e-32) stays above it.
pub const TINY: f32 = f32::from_bits(15 << 23);

/// Written into every output before the call: a signalling NaN that no
/// arithmetic produces, so an element the backend never wrote is caught.
pub const POISON: u32 = 0x7fa0_dead;
/// Written into every `info` before the call.
pub const INFO_POISON: Info = Info(-99);

/// A decoded input: the batch, the tuning, and whether to hand the backend
/// outputs of another shape.
#[derive(Debug)]
pub struct Input {
    /// The batch shape.
    pub shape: Shape,
    /// Row-major matrices.
    pub a: Vec<f32>,
    /// Tuning of the backend under test.
    pub tuning: Tuning,
    /// Outputs of this shape instead, when it differs (misuse).
    pub out_shape: Shape,
}

/// Decodes bytes into an [`Input`].
pub fn decode(data: &[u8]) -> Input {
    let mut r = Reader::new(data);
    let batch = r.below(MAX_BATCH + 1);
    let n = r.below(MAX_N + 1);
    let tuning = Tuning {
        small_n: [0, 1, 7, 16, 33, 64][r.below(6)],
        block: r.below(34),
        batch_parallel_min: r.below(4),
        batch_parallel_min_work: [0, 1 << 21][r.below(2)],
        par_update_min_cols: [0, 1, 8, 256][r.below(4)],
        panel_leaf: r.below(34),
        wide_block: r.below(34),
        wide_block_min_n: [0, 17, 40, usize::MAX][r.below(4)],
    };
    let out_shape = match r.u8() {
        0xfe => Shape::new(batch + 1, n).unwrap(),
        0xff => Shape::new(batch, n + 1).unwrap(),
        _ => Shape::new(batch, n).unwrap(),
    };
    let shape = Shape::new(batch, n).unwrap();
    let mut a = Vec::with_capacity(shape.a_len());
    for _ in 0..batch {
        a.extend(matrix(&mut r, n));
    }
    Input {
        shape,
        a,
        tuning,
        out_shape,
    }
}

/// One `n x n` matrix: a structure, a scale and a grading chosen by the
/// input, its bulk from a seeded generator, then a few entries of any bit
/// pattern written over it.
fn matrix(r: &mut Reader<'_>, n: usize) -> Vec<f32> {
    rect(r, n, n)
}

/// A row-major `rows x cols` matrix made as [`matrix`] makes a square one
/// (the same bytes give the same square matrix); "diagonal" and "band" are
/// relative to the top-left corner.
pub fn rect(r: &mut Reader<'_>, rows: usize, cols: usize) -> Vec<f32> {
    let structure = r.u8() % 8;
    let exponent = i32::from(r.u8() as i8);
    let grading = r.u8() % 4;
    let step = i32::from(r.u8() % 8);
    let mut rng = SplitMix::new(r.u64());
    let u: Vec<f64> = (0..rows.max(cols))
        .map(|_| f64::from(rng.next_unit()))
        .collect();
    let mut a = vec![0.0f32; rows * cols];
    for i in 0..rows {
        for j in 0..cols {
            let x = match structure {
                0 => f64::from(rng.next_unit()),
                1 if i <= j => f64::from(rng.next_unit()),
                2 if i == j => f64::from(rng.next_unit()),
                4 if i == j => 1.0,
                5 => u[i] * u[j],
                6 if i <= j + 1 && j <= i + 1 => f64::from(rng.next_unit()),
                // Every column a copy of the first up to a 2^-20 change.
                7 => u[i] + f64::from(rng.next_unit()) * 2f64.powi(-20),
                _ => 0.0,
            };
            let grade = match grading {
                1 => -step * j as i32,
                2 => -step * i as i32,
                3 => (rng.next_u64() % 64) as i32 - 32,
                _ => 0,
            };
            // Clamp, so that scaling makes huge entries rather than infinities;
            // non-finite entries come from the overrides below.
            let y = x * 2f64.powi(exponent + grade);
            a[i * cols + j] = (y as f32).clamp(f32::MIN, f32::MAX);
        }
    }
    if rows * cols > 0 {
        for _ in 0..r.below(8) {
            let at = r.below(rows * cols);
            a[at] = r.f32_any();
        }
    }
    a
}

/// Decodes one input and checks it; panics on a contract violation.
pub fn check(data: &[u8]) {
    let input = decode(data);
    let backend = CpuBackend::with_tuning(input.tuning.clone());
    let shape = input.shape;
    let view = BatchRef::new(shape, &input.a).unwrap();
    let os = input.out_shape;
    let mut h = vec![f32::from_bits(POISON); os.a_len()];
    let mut tau = vec![f32::from_bits(POISON); os.tau_len()];
    let mut info = vec![INFO_POISON; os.info_len()];
    let out = BatchMut::new(os, &mut h, &mut tau, &mut info).unwrap();
    let result = backend.geqrf_into(view, out);
    if os != shape {
        // Two empty batches of different orders have the same (empty)
        // buffers; either answer is sound there, and no output can be wrong.
        let lens = |s: Shape| (s.a_len(), s.tau_len(), s.info_len());
        let must_fail = lens(os) != lens(shape);
        assert!(
            matches!(result, Err(QrError::LengthMismatch { .. })) || !must_fail && result.is_ok(),
            "input {shape}, outputs {os}: {result:?}"
        );
        return;
    }
    result.unwrap_or_else(|e| panic!("valid call failed: {e}"));
    check_outputs(shape, &input.a, &h, &tau, &info);
}

/// The per-matrix contract of the module documentation, for a batch the
/// backend has written into `h`, `tau` and `info`.
pub fn check_outputs(shape: Shape, a: &[f32], h: &[f32], tau: &[f32], info: &[Info]) {
    let n = shape.n();
    if n == 0 {
        assert!(info.iter().all(|i| i.is_ok()), "empty matrices: {info:?}");
        return;
    }
    let report = gate::check(shape, a, h, tau).expect("lengths match");
    for (b, (&info, &g)) in info.iter().zip(&report.matrices).enumerate() {
        let m = b * n * n..(b + 1) * n * n;
        let t = b * n..(b + 1) * n;
        let what = format!("matrix {b} of {shape}");
        check_matrix(&what, n, &a[m.clone()], &h[m], &tau[t], info, g);
    }
    assert_eq!(report.matrices.len(), shape.batch());
}

fn check_matrix(
    what: &str,
    n: usize,
    a: &[f32],
    h: &[f32],
    tau: &[f32],
    info: Info,
    g: gate::MatrixGate,
) {
    let unwritten = h.iter().chain(tau).any(|x| x.to_bits() == POISON);
    assert!(!unwritten, "{what}: an output element was never written");
    if !a.iter().all(|x| x.is_finite()) {
        assert_eq!(info, Info::NON_FINITE, "{what}: non-finite input");
        assert!(
            h.iter().chain(tau).all(|x| x.is_nan()),
            "{what}: flagged outputs must be NaN"
        );
        return;
    }
    let amax = a.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    let fit = if amax > HUGE { r_fits(n, a) } else { Fit::Fits };
    if info == Info::OVERFLOW {
        assert!(
            fit != Fit::Fits,
            "{what}: OVERFLOW although R fits f32 (amax {amax:e})"
        );
        assert!(
            h.iter().chain(tau).all(|x| x.is_nan()),
            "{what}: flagged outputs must be NaN"
        );
        return;
    }
    assert!(
        fit != Fit::Overflows,
        "{what}: {info:?} although an entry of R exceeds f32::MAX (amax {amax:e})"
    );
    assert_eq!(info, Info::OK, "{what}: finite input not factored");
    assert!(
        h.iter().chain(tau).all(|x| x.is_finite()),
        "{what}: Info::OK with a non-finite output (amax {amax:e})"
    );
    check_convention(what, n, a, h, tau);

    if amax == 0.0 {
        assert!(
            h.iter().all(|&x| x == 0.0),
            "{what}: zero matrix, H not zero"
        );
        return;
    }
    if amax < TINY {
        let anorm = one_norm(n, a);
        let floored = g.sfr * anorm / anorm.max(f64::from(TINY));
        assert!(
            g.orth <= ORTH_GATE && floored <= SFR_GATE,
            "{what}: tiny matrix (amax {amax:e}): orth {} floored sfr {floored}",
            g.orth
        );
        return;
    }
    assert!(
        g.passes_gate(),
        "{what}: amax {amax:e} fails the gate: sfr {} orth {}",
        g.sfr,
        g.orth
    );
}

/// The exact rules of the convention that hold for every finite input.
fn check_convention(what: &str, n: usize, a: &[f32], h: &[f32], tau: &[f32]) {
    for (j, &t) in tau.iter().enumerate() {
        assert!(
            (0.0..=2.0).contains(&t),
            "{what}: tau[{j}] = {t} outside [0, 2]"
        );
        if t == 0.0 {
            assert!(
                (j + 1..n).all(|i| h[i * n + j] == 0.0),
                "{what}: tau[{j}] = 0 but its reflector is not zero"
            );
        }
    }
    assert_eq!(
        tau[n - 1],
        0.0,
        "{what}: the last reflector must be the identity"
    );
    let first_sub_zero = (1..n).all(|i| a[i * n] == 0.0);
    assert_eq!(
        tau[0] == 0.0,
        first_sub_zero,
        "{what}: tau[0] = {} but A[1.., 0] zero is {first_sub_zero}",
        tau[0]
    );
    let upper = (0..n).all(|i| (0..i).all(|j| a[i * n + j] == 0.0));
    if upper {
        assert!(
            tau.iter().all(|&t| t == 0.0),
            "{what}: upper-triangular A, tau not 0"
        );
        assert!(
            h == a,
            "{what}: upper-triangular A must come back unchanged"
        );
    }
}

/// Above this `amax` (2^112) an entry of `R` may not fit `f32`; below it
/// every column norm is under `2^115` (`n <= 64`).
pub const HUGE: f32 = f32::from_bits((127 + 112) << 23);

/// Whether the `R` of a finite matrix fits `f32`. `|R_ij| <= ||a_j||` for
/// any orthogonal `Q`, so columns of 2-norm below `f32::MAX` always fit;
/// `|R_00| = ||a_0||`, so a first column above it never does. Elsewhere `R`
/// is determined only up to the backward error (an ill-conditioned leading
/// block leaves `Q`'s columns, and `R_ij` with them, anywhere within the
/// column norms), so either answer is sound. The margin `32 n eps` covers
/// rounding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fit {
    Fits,
    Either,
    Overflows,
}

fn r_fits(n: usize, a: &[f32]) -> Fit {
    let max = f64::from(f32::MAX);
    let slack = 32.0 * n as f64 * f64::from(f32::EPSILON);
    let norm = |j: usize| {
        (0..n)
            .map(|i| f64::from(a[i * n + j]).powi(2))
            .sum::<f64>()
            .sqrt()
    };
    if norm(0) > max * (1.0 + slack) {
        Fit::Overflows
    } else if (0..n).all(|j| norm(j) < max * (1.0 - slack)) {
        Fit::Fits
    } else {
        Fit::Either
    }
}

/// `||A||_1` in `f64`.
fn one_norm(n: usize, a: &[f32]) -> f64 {
    (0..n)
        .map(|j| (0..n).map(|i| f64::from(a[i * n + j]).abs()).sum::<f64>())
        .fold(0.0, f64::max)
}
