//! The acceptance gate of DESIGN section 1, per matrix, in `f64`.
//!
//! `Q` is this crate's own [`householder_product`](crate::householder) of the
//! backend's `(H, tau)` and `R = triu(H)`, both widened from `f32`; every
//! product is a faer `f64` matrix product. With `eps = 2^-23` and `||.||_1`
//! the maximum absolute column sum:
//!
//! - `sfr = ||R - Q^T A||_1 / (n eps ||A||_1)`, gate 20, bar 5;
//! - `orth = ||Q^T Q - I||_1 / (n eps)`, gate 100, bar 25;
//! - diagnostics, scaled as `sfr`: `recon = ||Q R - A||_1` and `leakage`,
//!   the norm of the strictly lower triangle of `Q^T A` (what a backend left
//!   below the diagonal of `R`).
//!
//! Any NaN or infinity in `H` or `tau` makes every value infinite, and a NaN
//! anywhere fails, so a wrong or missing factorization never passes.

use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, Mat, MatRef, Par};
use qr_core::{BatchRef, EPS_F32, QrError, Shape};
use rayon::prelude::*;

use crate::householder::q_from_reflectors;

/// Largest `sfr` the gate accepts.
pub const SFR_GATE: f64 = 20.0;
/// Largest `orth` the gate accepts.
pub const ORTH_GATE: f64 = 100.0;
/// Largest `sfr` the project's own bar accepts.
pub const SFR_BAR: f64 = 5.0;
/// Largest `orth` the project's own bar accepts.
pub const ORTH_BAR: f64 = 25.0;

/// The gate's measurements of one matrix.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MatrixGate {
    /// Scaled factor residual `||R - Q^T A||_1 / (n eps ||A||_1)`.
    pub sfr: f64,
    /// Scaled orthogonality `||Q^T Q - I||_1 / (n eps)`.
    pub orth: f64,
    /// Scaled reconstruction `||Q R - A||_1 / (n eps ||A||_1)`.
    pub recon: f64,
    /// Scaled lower-triangle leakage `||tril(Q^T A, -1)||_1 / (n eps ||A||_1)`.
    pub leakage: f64,
}

impl MatrixGate {
    /// The values a non-finite factorization gets.
    const NON_FINITE: MatrixGate = MatrixGate {
        sfr: f64::INFINITY,
        orth: f64::INFINITY,
        recon: f64::INFINITY,
        leakage: f64::INFINITY,
    };

    /// Within the contract's gate: `sfr <= 20` and `orth <= 100` (NaN fails).
    pub fn passes_gate(&self) -> bool {
        self.sfr <= SFR_GATE && self.orth <= ORTH_GATE
    }

    /// Within the project's bar: `sfr <= 5` and `orth <= 25` (NaN fails).
    pub fn meets_bar(&self) -> bool {
        self.sfr <= SFR_BAR && self.orth <= ORTH_BAR
    }
}

/// The gate's measurements of every matrix of a batch, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GateReport {
    /// One entry per matrix.
    pub matrices: Vec<MatrixGate>,
}

impl GateReport {
    /// Largest `sfr` (NaN if any is NaN; 0 for an empty report).
    pub fn worst_sfr(&self) -> f64 {
        nan_max(self.matrices.iter().map(|m| m.sfr))
    }

    /// Largest `orth` (NaN if any is NaN; 0 for an empty report).
    pub fn worst_orth(&self) -> f64 {
        nan_max(self.matrices.iter().map(|m| m.orth))
    }

    /// Every matrix passes the gate.
    pub fn passes_gate(&self) -> bool {
        self.matrices.iter().all(MatrixGate::passes_gate)
    }

    /// Every matrix meets the bar.
    pub fn meets_bar(&self) -> bool {
        self.matrices.iter().all(MatrixGate::meets_bar)
    }

    /// Appends another report's matrices (used to gate several inputs of one case).
    pub fn extend(&mut self, other: GateReport) {
        self.matrices.extend(other.matrices);
    }
}

/// Gates every matrix of the batch `a` against its factorization `(h, tau)`.
///
/// Lengths are checked against `shape`. Matrices are gated in parallel on the
/// global rayon pool when the batch can fill it; a smaller batch is gated one
/// matrix at a time with parallel products instead, which also bounds memory.
pub fn check(shape: Shape, a: &[f32], h: &[f32], tau: &[f32]) -> Result<GateReport, QrError> {
    Shape::check_len("h", shape.a_len(), h.len())?;
    Shape::check_len("tau", shape.tau_len(), tau.len())?;
    let a = BatchRef::new(shape, a)?;
    let h = BatchRef::new(shape, h)?;
    let n = shape.n();
    let one = |b: usize, par: Par| {
        let t = &tau[b * n..(b + 1) * n];
        gate_matrix(n, a.matrix(b), h.matrix(b), t, par)
    };
    let count = a.matrices().len();
    let matrices = if count >= rayon::current_num_threads() {
        (0..count)
            .into_par_iter()
            .map(|b| one(b, Par::Seq))
            .collect()
    } else {
        (0..count).map(|b| one(b, Par::rayon(0))).collect()
    };
    Ok(GateReport { matrices })
}

/// The gate of one row-major `n x n` matrix (`n >= 1`).
fn gate_matrix(n: usize, a: &[f32], h: &[f32], tau: &[f32], par: Par) -> MatrixGate {
    if !h.iter().chain(tau).all(|x| x.is_finite()) {
        return MatrixGate::NON_FINITE;
    }
    let widen = |m: &[f32]| Mat::from_fn(n, n, |i, j| f64::from(m[i * n + j]));
    let a = widen(a);
    let hm = widen(h);
    let tau: Vec<f64> = tau.iter().map(|&t| f64::from(t)).collect();
    let q = q_from_reflectors(hm.as_ref(), &tau, par);
    let r = Mat::from_fn(n, n, |i, j| if i <= j { hm[(i, j)] } else { 0.0 });
    drop(hm);

    let anorm = one_norm(a.as_ref());
    let scale_a = n as f64 * EPS_F32 * anorm;

    let mut qta = Mat::<f64>::zeros(n, n);
    matmul(
        qta.as_mut(),
        Accum::Replace,
        q.transpose(),
        a.as_ref(),
        1.0,
        par,
    );
    let leakage = one_norm_where(qta.as_ref(), |i, j| i > j, |x, _, _| x);
    let residual = one_norm_where(qta.as_ref(), |_, _| true, |x, i, j| r[(i, j)] - x);

    // Q^T Q - I is symmetric: form its lower triangle only (half the
    // flops), in the product buffer, and mirror it for the column sums.
    triangular::matmul(
        qta.as_mut(),
        BlockStructure::TriangularLower,
        Accum::Replace,
        q.transpose(),
        BlockStructure::Rectangular,
        q.as_ref(),
        BlockStructure::Rectangular,
        1.0,
        par,
    );
    let orth = symmetric_one_norm(qta.as_ref(), |x, i, j| if i == j { x - 1.0 } else { x });

    // R is upper triangular: half the flops of a full product.
    triangular::matmul(
        qta.as_mut(),
        BlockStructure::Rectangular,
        Accum::Replace,
        q.as_ref(),
        BlockStructure::Rectangular,
        r.as_ref(),
        BlockStructure::TriangularUpper,
        1.0,
        par,
    );
    let recon = one_norm_where(qta.as_ref(), |_, _| true, |x, i, j| x - a[(i, j)]);

    MatrixGate {
        sfr: scaled(residual, scale_a),
        orth: scaled(orth, n as f64 * EPS_F32),
        recon: scaled(recon, scale_a),
        leakage: scaled(leakage, scale_a),
    }
}

/// `x / by`, except that a zero `by` (an all-zero `A`) gives 0 for an exact
/// zero residual and infinity for any other.
pub(crate) fn scaled(x: f64, by: f64) -> f64 {
    if by > 0.0 {
        x / by
    } else if x == 0.0 {
        0.0
    } else {
        f64::INFINITY
    }
}

/// `||A||_1`, the largest absolute column sum; NaN propagates.
pub(crate) fn one_norm(a: MatRef<'_, f64>) -> f64 {
    one_norm_where(a, |_, _| true, |x, _, _| x)
}

/// The 1-norm of the matrix `f(a[i][j], i, j)` restricted to entries where
/// `keep(i, j)` (the rest count as zero); NaN propagates.
pub(crate) fn one_norm_where(
    a: MatRef<'_, f64>,
    keep: impl Fn(usize, usize) -> bool,
    f: impl Fn(f64, usize, usize) -> f64,
) -> f64 {
    nan_max((0..a.ncols()).map(|j| {
        (0..a.nrows())
            .filter(|&i| keep(i, j))
            .map(|i| f(a[(i, j)], i, j).abs())
            .sum::<f64>()
    }))
}

/// The 1-norm of the symmetric matrix whose lower triangle (diagonal
/// included) is `f(s[i][j], i, j)` for `i >= j`; the upper triangle of `s`
/// is not read. NaN propagates.
pub(crate) fn symmetric_one_norm(s: MatRef<'_, f64>, f: impl Fn(f64, usize, usize) -> f64) -> f64 {
    let n = s.ncols();
    let mut sums = vec![0.0; n];
    for j in 0..n {
        for i in j..n {
            let x = f(s[(i, j)], i, j).abs();
            sums[j] += x;
            if i != j {
                sums[i] += x;
            }
        }
    }
    nan_max(sums)
}

/// The maximum, NaN if any value is NaN (`f64::max` would drop it), 0 if empty.
pub(crate) fn nan_max(xs: impl IntoIterator<Item = f64>) -> f64 {
    xs.into_iter().fold(0.0, |m, x| {
        if m.is_nan() || x.is_nan() {
            f64::NAN
        } else {
            m.max(x)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_fails_every_check() {
        let nan = MatrixGate {
            sfr: f64::NAN,
            orth: 0.0,
            recon: 0.0,
            leakage: 0.0,
        };
        assert!(!nan.passes_gate() && !nan.meets_bar());
        let r = GateReport {
            matrices: vec![MatrixGate { sfr: 1.0, ..nan }, nan],
        };
        assert!(r.worst_sfr().is_nan());
        assert!(!r.passes_gate());
        assert_eq!(nan_max([]), 0.0);
        assert_eq!(nan_max([1.0, 3.0, 2.0]), 3.0);
    }

    #[test]
    fn bar_is_stricter_than_gate() {
        let g = MatrixGate {
            sfr: 6.0,
            orth: 1.0,
            recon: 0.0,
            leakage: 0.0,
        };
        assert!(g.passes_gate() && !g.meets_bar());
        let g = MatrixGate {
            orth: 26.0,
            sfr: 1.0,
            ..g
        };
        assert!(g.passes_gate() && !g.meets_bar());
        let g = MatrixGate { orth: 101.0, ..g };
        assert!(!g.passes_gate());
    }

    #[test]
    fn identity_factorization_is_exact() {
        // A = I: H = I, tau = 0 is its exact geqrf.
        let n = 5;
        let mut a = vec![0.0f32; n * n];
        (0..n).for_each(|i| a[i * n + i] = 1.0);
        let shape = Shape::new(1, n).unwrap();
        let r = check(shape, &a, &a, &[0.0; 5]).unwrap();
        assert_eq!(
            r.matrices,
            vec![MatrixGate {
                sfr: 0.0,
                orth: 0.0,
                recon: 0.0,
                leakage: 0.0
            }]
        );
    }

    #[test]
    fn zero_matrix_and_empty_shapes() {
        let shape = Shape::new(2, 3).unwrap();
        let z = [0.0f32; 18];
        let r = check(shape, &z, &z, &[0.0; 6]).unwrap();
        assert!(r.passes_gate() && r.worst_sfr() == 0.0);
        // R nonzero for A = 0 is wrong and infinitely so.
        let mut h = z;
        h[0] = 1.0;
        assert!(!check(shape, &z, &h, &[0.0; 6]).unwrap().passes_gate());
        let empty = Shape::new(3, 0).unwrap();
        assert!(check(empty, &[], &[], &[]).unwrap().matrices.is_empty());
    }

    #[test]
    fn symmetric_norm_mirrors_the_lower_triangle() {
        // Lower triangle of [[1, -2, 3], [-2, 4, 5], [3, 5, -6]]; the upper
        // entries hold garbage that must not be read.
        let s = faer::mat![[1.0, 99.0, 99.0], [-2.0, 4.0, 99.0], [3.0, 5.0, -6.0]];
        assert_eq!(symmetric_one_norm(s.as_ref(), |x, _, _| x), 14.0);
        assert_eq!(one_norm(s.as_ref()), 204.0);
        let t = faer::mat![[1.0, 0.0], [f64::NAN, 1.0]];
        assert!(symmetric_one_norm(t.as_ref(), |x, _, _| x).is_nan());
    }

    #[test]
    fn lengths_are_checked() {
        let shape = Shape::new(1, 2).unwrap();
        assert!(matches!(
            check(shape, &[0.0; 4], &[0.0; 4], &[0.0; 1]),
            Err(QrError::LengthMismatch { what: "tau", .. })
        ));
        assert!(check(shape, &[0.0; 3], &[0.0; 4], &[0.0; 2]).is_err());
    }
}
