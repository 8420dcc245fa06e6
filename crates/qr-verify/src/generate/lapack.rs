//! LAPACK's eight QR test matrix types (`xCHKQR` with `xLATB4`/`xLATMS`):
//! matrices with prescribed singular values `s_i = anorm * cond^(-i/(n-1))`
//! (geometric, `MODE = 3`).
//!
//! Types 1-3 (diagonal, upper, lower) and 4 use `cond = 2`; type 5 uses
//! `sqrt(0.1 / eps)`, type 6 `0.1 / eps`; types 7 and 8 scale type 4 to
//! `anorm` near underflow and overflow. `eps` is `slamch('E') = 2^-24`, the
//! single-precision rounding unit, since the matrices are `f32`.
//!
//! Full types are `U diag(s) V^T` with random orthogonal `U`, `V`, each a
//! product of `n` reflectors along Gaussian directions (Stewart's
//! construction, as `xLAROR` does). The triangular types take `R` with
//! `R^T R = V diag(s)^2 V^T` (a Cholesky factor), which has singular values
//! `s` exactly as `xLATMS`'s band reduction would give.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par, Side};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::randn;
use crate::householder::q_from_reflectors;
use crate::reference::larfg;

/// One of LAPACK's eight QR test matrix types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LapackType {
    /// Type 1: diagonal, condition 2, random signs.
    Diagonal,
    /// Type 2: upper triangular, condition 2.
    Upper,
    /// Type 3: lower triangular, condition 2.
    Lower,
    /// Type 4: full, condition 2.
    Cond2,
    /// Type 5: full, condition `sqrt(0.1 / eps)` (about 1.3e3).
    CondSqrt,
    /// Type 6: full, condition `0.1 / eps` (about 1.7e6).
    CondBig,
    /// Type 7: type 4 scaled to norm `0.25 * safmin / eps` (about 4.9e-32).
    Tiny,
    /// Type 8: type 4 scaled to the reciprocal of type 7's norm (about 2.0e31).
    Huge,
}

impl LapackType {
    /// All eight types in LAPACK's order.
    pub const ALL: [LapackType; 8] = [
        LapackType::Diagonal,
        LapackType::Upper,
        LapackType::Lower,
        LapackType::Cond2,
        LapackType::CondSqrt,
        LapackType::CondBig,
        LapackType::Tiny,
        LapackType::Huge,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            LapackType::Diagonal => "lapack-diag",
            LapackType::Upper => "lapack-upper",
            LapackType::Lower => "lapack-lower",
            LapackType::Cond2 => "lapack-cond2",
            LapackType::CondSqrt => "lapack-condsqrt",
            LapackType::CondBig => "lapack-condbig",
            LapackType::Tiny => "lapack-tiny",
            LapackType::Huge => "lapack-huge",
        }
    }

    /// The prescribed 2-norm condition number.
    pub fn cond(self) -> f64 {
        match self {
            LapackType::CondSqrt => (0.1 / EPS).sqrt(),
            LapackType::CondBig => 0.1 / EPS,
            _ => 2.0,
        }
    }

    /// The prescribed 2-norm (largest singular value).
    pub fn norm(self) -> f64 {
        match self {
            LapackType::Tiny => SMALL,
            LapackType::Huge => 1.0 / SMALL,
            _ => 1.0,
        }
    }

    /// The prescribed singular values of an `n x n` matrix, largest first.
    pub fn singular_values(self, n: usize) -> Vec<f64> {
        let (cond, norm) = (self.cond(), self.norm());
        (0..n)
            .map(|i| {
                let e = if n == 1 {
                    0.0
                } else {
                    i as f64 / (n - 1) as f64
                };
                norm * cond.powf(-e)
            })
            .collect()
    }
}

/// `slamch('E')` in single precision: the rounding unit `2^-24`.
const EPS: f64 = f32::EPSILON as f64 / 2.0;

/// `xLATB4`'s small norm: `0.25 * (safmin / eps)` in single precision.
const SMALL: f64 = 0.25 * (f32::MIN_POSITIVE as f64 / EPS);

/// One row-major `n x n` matrix of type `t`.
pub(super) fn generate(t: LapackType, n: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    let s = t.singular_values(n);
    let mut a = vec![0.0; n * n];
    // Each matrix is generated inside a rayon task already; faer products
    // stay sequential so that batches scale over matrices.
    let par = Par::Seq;
    match t {
        LapackType::Diagonal => {
            for (i, si) in s.iter().enumerate() {
                a[i * n + i] = if rng.random::<bool>() { *si } else { -*si };
            }
        }
        LapackType::Upper | LapackType::Lower => {
            let v = random_orthogonal(n, rng, par);
            let vs = Mat::from_fn(n, n, |i, j| v[(i, j)] * s[j]);
            let mut gram = Mat::<f64>::zeros(n, n);
            matmul(
                gram.as_mut(),
                Accum::Replace,
                vs.as_ref(),
                vs.transpose(),
                1.0,
                par,
            );
            let l = match gram.llt(Side::Lower) {
                Ok(llt) => llt.L().to_owned(),
                // V diag(s)^2 V^T has condition 4: Cholesky cannot fail on it.
                Err(e) => unreachable!("Cholesky of a condition-4 Gram matrix failed: {e:?}"),
            };
            for i in 0..n {
                for j in 0..=i {
                    if t == LapackType::Lower {
                        a[i * n + j] = l[(i, j)];
                    } else {
                        a[j * n + i] = l[(i, j)];
                    }
                }
            }
        }
        _ => {
            let u = random_orthogonal(n, rng, par);
            let v = random_orthogonal(n, rng, par);
            let us = Mat::from_fn(n, n, |i, j| u[(i, j)] * s[j]);
            let mut m = Mat::<f64>::zeros(n, n);
            matmul(
                m.as_mut(),
                Accum::Replace,
                us.as_ref(),
                v.transpose(),
                1.0,
                par,
            );
            for i in 0..n {
                for j in 0..n {
                    a[i * n + j] = m[(i, j)];
                }
            }
        }
    }
    a
}

/// A random orthogonal matrix: `H_0 ... H_{n-1}` where `H_j` maps an
/// independent Gaussian vector of length `n - j` onto a multiple of `e_0`.
fn random_orthogonal(n: usize, rng: &mut ChaCha8Rng, par: Par) -> Mat<f64> {
    let mut h = Mat::<f64>::zeros(n, n);
    let mut tau = vec![0.0; n];
    for j in 0..n {
        let mut x = randn(n - j, rng);
        tau[j] = larfg(&mut x).tau;
        for (i, &vi) in (j + 1..n).zip(&x[1..]) {
            h[(i, j)] = vi;
        }
    }
    q_from_reflectors(h.as_ref(), &tau, par)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Singular values by nalgebra's SVD, largest first.
    fn svd(n: usize, a: &[f64]) -> Vec<f64> {
        let m = nalgebra::DMatrix::from_row_slice(n, n, a);
        let mut s: Vec<f64> = m.singular_values().iter().copied().collect();
        s.sort_by(|x, y| y.total_cmp(x));
        s
    }

    #[test]
    fn constants_match_lapack() {
        assert!((LapackType::CondSqrt.cond() - 1295.2).abs() < 0.1);
        assert!((LapackType::CondBig.cond() - 1.6777e6).abs() < 1e2);
        assert!((SMALL - 4.93e-32).abs() < 1e-34);
    }

    #[test]
    fn singular_values_are_prescribed() {
        let n = 20;
        for t in LapackType::ALL {
            let a = generate(t, n, &mut ChaCha8Rng::seed_from_u64(5));
            let want = t.singular_values(n);
            let got = svd(n, &a);
            for (g, w) in got.iter().zip(&want) {
                assert!(((g - w) / w).abs() < 1e-9, "{t:?}: {got:?} vs {want:?}");
            }
        }
    }

    #[test]
    fn triangular_types_are_triangular() {
        let n = 12;
        let up = generate(LapackType::Upper, n, &mut ChaCha8Rng::seed_from_u64(1));
        let lo = generate(LapackType::Lower, n, &mut ChaCha8Rng::seed_from_u64(1));
        let diag = generate(LapackType::Diagonal, n, &mut ChaCha8Rng::seed_from_u64(1));
        for i in 0..n {
            for j in 0..n {
                if j < i {
                    assert_eq!(up[i * n + j], 0.0);
                }
                if j > i {
                    assert_eq!(lo[i * n + j], 0.0);
                }
                if j != i {
                    assert_eq!(diag[i * n + j], 0.0);
                }
            }
        }
        assert!(up[n - 1] != 0.0 && lo[(n - 1) * n] != 0.0);
    }

    #[test]
    fn order_one_and_zero() {
        for t in LapackType::ALL {
            let a = generate(t, 1, &mut ChaCha8Rng::seed_from_u64(2));
            assert!((a[0].abs() - t.norm()).abs() <= 1e-12 * t.norm(), "{t:?}");
            assert!(generate(t, 0, &mut ChaCha8Rng::seed_from_u64(2)).is_empty());
        }
    }
}
