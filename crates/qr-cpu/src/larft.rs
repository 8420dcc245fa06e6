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
    larft_view(vm, tau, t, ldt, scratch);
}

/// [`larft`] for `V` given as a faer view in any layout (`orgqr` and
/// `ormqr` keep it row-major, where copying it out of `H` is contiguous).
pub(crate) fn larft_view(
    vm: MatRef<'_, f32>,
    tau: &[f32],
    t: &mut [f32],
    ldt: usize,
    scratch: &mut [f32],
) {
    let k = vm.ncols();
    if k == 0 {
        return;
    }
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
        // Column i is -tau_i T[..i, ..i] G[..i, i], written in place (it
        // depends only on columns < i). Accumulated column by column of T
        // (contiguous, so it vectorizes); each entry still sums over b in
        // ascending order from zero, the order of a row-by-row dot product.
        let (done, rest) = t.split_at_mut(i * ldt);
        let col = &mut rest[..k];
        col[..i].fill(0.0);
        for b in 0..i {
            let x = g[b + i * k];
            for (y, &tv) in col[..=b].iter_mut().zip(&done[b * ldt..b * ldt + b + 1]) {
                *y += tv * x;
            }
        }
        for y in &mut col[..i] {
            *y *= -ti;
        }
        col[i] = ti;
        col[i + 1..].fill(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The column recurrence gives `T` bit for bit as the row-by-row dot
    /// products `T[a][i] = -tau_i sum_{b=a}^{i-1} T[a][b] G[b][i]` do, so
    /// `geqrf`'s results do not depend on which of the two is used.
    #[test]
    fn column_recurrence_matches_row_dots_bitwise() {
        let (m, k) = (40usize, 13usize);
        let mut v: Vec<f32> = (0..m * k)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 31.0)
            .collect();
        for c in 0..k {
            v[c * m..c * m + c].fill(0.0);
            v[c * m + c] = 1.0;
        }
        let tau: Vec<f32> = (0..k).map(|i| 1.0 + (i as f32) / 17.0).collect();
        let mut t = vec![0.0f32; k * k];
        let mut g = vec![0.0f32; k * k];
        larft(m, k, &v, m, &tau, &mut t, k, &mut g);
        let mut r = vec![0.0f32; k * k];
        for i in 0..k {
            for a in 0..i {
                let mut s = 0.0f32;
                for b in a..i {
                    s += r[a + b * k] * g[b + i * k];
                }
                r[a + i * k] = -tau[i] * s;
            }
            r[i + i * k] = tau[i];
        }
        let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&t), bits(&r));
    }
}
