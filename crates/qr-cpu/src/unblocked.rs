//! Unblocked Householder QR (`geqr2`) of a row-major matrix, in place.
//!
//! Used for small orders, where the whole matrix sits in L1 and blocking
//! only adds copies. Row-major storage suits the update: applying `H_j` to
//! the trailing columns is `w = v^T A2` (a sum of scaled rows) followed by
//! the rank-1 update `A2 -= tau v w`, both loops along contiguous rows with
//! no horizontal reductions.

use crate::isa::multiversion;
use crate::reflector::reflector;
use crate::vector::axpy;

/// Scratch, in `f32`s, that [`geqr2_row_major`] needs for an `m x n` matrix.
pub fn geqr2_row_major_scratch(m: usize, n: usize) -> usize {
    m + n
}

multiversion! {
    /// Factors the `m x n` row-major matrix `a` (row stride `lda`) in place
    /// into `geqrf` form: `R` on and above the diagonal, `v[1..]` below,
    /// `min(m, n)` scalars in `tau`.
    ///
    /// # Panics
    /// If `lda < n`, `a` is shorter than the matrix, `tau` shorter than
    /// `min(m, n)`, or `scratch` shorter than [`geqr2_row_major_scratch`].
    pub fn geqr2_row_major(
        m: usize,
        n: usize,
        a: &mut [f32],
        lda: usize,
        tau: &mut [f32],
        scratch: &mut [f32],
    ) => geqr2_row_major_body
}

#[inline(always)]
pub(crate) fn geqr2_row_major_body(
    m: usize,
    n: usize,
    a: &mut [f32],
    lda: usize,
    tau: &mut [f32],
    scratch: &mut [f32],
) {
    let k = m.min(n);
    if k == 0 {
        return;
    }
    assert!(lda >= n, "row stride {lda} below the column count {n}");
    assert!(a.len() >= (m - 1) * lda + n, "matrix buffer too short");
    assert!(tau.len() >= k, "tau shorter than min(m, n)");
    let (v, w) = scratch.split_at_mut(m);
    let w = &mut w[..n];
    for j in 0..k {
        let alpha = a[j * lda + j];
        let mut ssq = 0.0f64;
        for i in j + 1..m {
            let x = f64::from(a[i * lda + j]);
            ssq += x * x;
        }
        let Some(r) = reflector(alpha, ssq) else {
            tau[j] = 0.0;
            continue;
        };
        tau[j] = r.tau;
        a[j * lda + j] = r.beta;
        v[j] = 1.0;
        for i in j + 1..m {
            let vi = (f64::from(a[i * lda + j]) * r.scale) as f32;
            a[i * lda + j] = vi;
            v[i] = vi;
        }
        let cols = n - j - 1;
        if cols == 0 {
            continue;
        }
        // w = v^T A[j.., j+1..], with v[j] = 1 implicit.
        let w = &mut w[..cols];
        w.copy_from_slice(&a[j * lda + j + 1..][..cols]);
        for i in j + 1..m {
            axpy(w, v[i], &a[i * lda + j + 1..][..cols]);
        }
        // A[j.., j+1..] -= tau v w^T.
        for i in j..m {
            axpy(&mut a[i * lda + j + 1..][..cols], -r.tau * v[i], w);
        }
    }
}
