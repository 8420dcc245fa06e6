//! The triangular factor of a compact-WY block reflector (LAPACK `larft`,
//! forward direction, columnwise storage).
//!
//! For reflectors `H_i = I - tau_i v_i v_i^T`, `i = 0..k`, the product
//! `H_0 H_1 ... H_{k-1} = I - V T V^T` with `T` upper triangular:
//! `T[i][i] = tau_i` and `T[0..i, i] = -tau_i T[0..i, 0..i] (V[:, 0..i]^T v_i)`.
//! The inner products `V^T V` are one matrix product (a Gram matrix through
//! faer); the recurrence on the `k x k` triangle is then `O(k^3)` scalar work.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};

/// Scratch, in `f32`s, that [`larft`] needs for `k` reflectors.
pub fn larft_scratch(k: usize) -> usize {
    k * k
}

/// Forms the `k x k` upper triangular `T` (column-major, column stride `ldt`,
/// zeros below the diagonal) of the block reflector `I - V T V^T` whose
/// reflectors are the columns of the dense `m x k` column-major `v` (column
/// stride `ldv`, explicit unit diagonal, zeros above it), with scalars `tau`.
///
/// A reflector with `tau_i = 0` (the identity) gives a zero column of `T`,
/// as LAPACK's `larft` does.
///
/// # Panics
/// If `ldv < m`, `m < k`, `ldt < k`, or a buffer is shorter than the sizes
/// say.
#[allow(clippy::too_many_arguments)] // LAPACK's argument list, strides included
pub fn larft(
    m: usize,
    k: usize,
    v: &[f32],
    ldv: usize,
    tau: &[f32],
    t: &mut [f32],
    ldt: usize,
    scratch: &mut [f32],
) {
    if k == 0 {
        return;
    }
    assert!(
        m >= k && ldv >= m,
        "V must be m x k with m >= k and ldv >= m"
    );
    assert!(ldt >= k, "T's column stride below k");
    assert!(tau.len() >= k && t.len() >= (k - 1) * ldt + k && scratch.len() >= k * k);
    let vm = MatRef::from_column_major_slice_with_stride(&v[..(k - 1) * ldv + m], m, k, ldv);
    let g = &mut scratch[..k * k];
    matmul(
        MatMut::from_column_major_slice_mut(g, k, k),
        Accum::Replace,
        vm.transpose(),
        vm,
        1.0f32,
        Par::Seq,
    );
    for i in 0..k {
        let ti = tau[i];
        // Entries of column i depend only on columns < i, so the column can
        // be written in place, row by row.
        for a in 0..i {
            let mut s = 0.0f32;
            for b in a..i {
                s += t[a + b * ldt] * g[b + i * k];
            }
            t[a + i * ldt] = -ti * s;
        }
        t[i + i * ldt] = ti;
        for r in i + 1..k {
            t[r + i * ldt] = 0.0;
        }
    }
}
