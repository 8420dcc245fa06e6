//! LAPACK's own QR test ratios (`xQRT01`, as `xCHKQR` runs them), for any
//! backend's `(H, tau)`:
//!
//! - `||A - Q R||_1 / (max(1, n) eps ||A||_1)`
//! - `||I - Q^T Q||_1 / (max(1, n) eps)`
//!
//! with LAPACK's `eps = slamch('E') = 2^-24` and its default threshold 30.
//! `Q` comes from this crate's own [`householder_product`], independent of
//! the code under test.

use crate::householder::householder_product;

/// LAPACK's default `THRESH` for the QR tests: a ratio must stay below it.
pub const LAPACK_THRESH: f64 = 30.0;

/// `slamch('E')`: the single-precision unit roundoff LAPACK's ratios use
/// (half the `eps = 2^-23` of this project's gate).
pub const LAPACK_EPS: f64 = 1.0 / (1u64 << 24) as f64;

/// LAPACK's two ratios `(residual, orthogonality)` for one row-major
/// `n x n` matrix `a` and its factorization `h`, `tau`, computed in `f64`.
///
/// A NaN anywhere (an unwritten or poisoned output) makes the ratio NaN,
/// which fails LAPACK's `ratio < THRESH` test. For `A = 0` the residual
/// ratio is the residual itself over `max(1, n) eps`, as LAPACK defines it.
/// Buffers of the wrong lengths (`n * n`, `n * n`, `n`) give NaN ratios.
/// `O(n^3)`; the products beyond `Q` run on the calling thread.
pub fn lapack_ratios(n: usize, a: &[f32], h: &[f32], tau: &[f32]) -> (f64, f64) {
    if a.len() != n * n || h.len() != n * n || tau.len() != n {
        return (f64::NAN, f64::NAN);
    }
    let q = householder_product(n, h, tau);
    let r = |i: usize, j: usize| if i <= j { f64::from(h[i * n + j]) } else { 0.0 };
    let norm1 = |f: &dyn Fn(usize, usize) -> f64| {
        (0..n)
            .map(|j| (0..n).map(|i| f(i, j).abs()).sum::<f64>())
            .fold(0.0, |m: f64, x| {
                // f64::max drops NaN; a NaN column must poison the norm.
                if m.is_nan() || x.is_nan() {
                    f64::NAN
                } else {
                    m.max(x)
                }
            })
    };
    // Q R and Q^T Q by rows of Q, O(n^3) once per product.
    let mut qr = vec![0.0f64; n * n];
    let mut qtq = vec![0.0f64; n * n];
    for i in 0..n {
        for k in 0..n {
            let qik = q[i * n + k];
            for j in k..n {
                qr[i * n + j] += qik * r(k, j);
            }
            for j in 0..n {
                qtq[k * n + j] += qik * q[i * n + j];
            }
        }
    }
    let anorm = norm1(&|i, j| f64::from(a[i * n + j]));
    let scale = n.max(1) as f64 * LAPACK_EPS;
    let resid = norm1(&|i, j| f64::from(a[i * n + j]) - qr[i * n + j]);
    let orth = norm1(&|i, j| qtq[i * n + j] - if i == j { 1.0 } else { 0.0 });
    let resid_ratio = if anorm > 0.0 {
        resid / (scale * anorm)
    } else {
        resid / scale
    };
    (resid_ratio, orth / scale)
}
