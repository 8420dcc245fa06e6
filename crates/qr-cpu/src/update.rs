//! Applying a block reflector from the left (LAPACK `larfb` with
//! `side = L`, `trans = T`, forward, columnwise), through faer's products.

use faer::linalg::matmul::matmul;
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{Accum, MatMut, MatRef, Par};

/// Scratch, in `f32`s, that [`apply_block_reflector_left`] needs for `k`
/// reflectors and `ncols` columns of `C`.
pub fn apply_block_reflector_left_scratch(k: usize, ncols: usize) -> usize {
    2 * k * ncols
}

/// `C -= V T^T V^T C`, i.e. `C = Q^T C` for `Q = I - V T V^T`, with `V`
/// dense `m x k` (explicit unit diagonal and zeros above it), `T` the
/// `k x k` upper triangular factor from [`larft`](crate::kernels::larft)
/// (zeros below the diagonal) and `C` `m x n` in any layout.
///
/// Three products: `W = V^T C`, `W = T^T W`, `C -= V W`. `T` is multiplied
/// as a dense matrix: its zero lower triangle costs `k/(2m)` of the work,
/// less than a triangular product's extra passes at these sizes.
///
/// # Panics
/// If the shapes disagree or `scratch` is shorter than
/// [`apply_block_reflector_left_scratch`].
pub fn apply_block_reflector_left(
    v: MatRef<'_, f32>,
    t: MatRef<'_, f32>,
    c: MatMut<'_, f32>,
    scratch: &mut [f32],
    par: Par,
) {
    apply_block_reflector(v, t, true, c, scratch, par);
}

/// `C = Q C` (`transpose == false`) or `C = Q^T C` (`true`) for the block
/// reflector `Q = I - V T V^T`, shapes and scratch as for
/// [`apply_block_reflector_left`]: `W = V^T C`, `W = op(T) W`, `C -= V W`.
pub(crate) fn apply_block_reflector(
    v: MatRef<'_, f32>,
    t: MatRef<'_, f32>,
    transpose: bool,
    c: MatMut<'_, f32>,
    scratch: &mut [f32],
    par: Par,
) {
    let (m, k) = v.shape();
    let n = c.ncols();
    assert!(
        c.nrows() == m && t.nrows() == k && t.ncols() == k,
        "shapes disagree"
    );
    if k == 0 || n == 0 || m == 0 {
        return;
    }
    let (w, tw) = scratch[..2 * k * n].split_at_mut(k * n);
    let mut w = MatMut::from_column_major_slice_mut(w, k, n);
    let mut tw = MatMut::from_column_major_slice_mut(tw, k, n);
    matmul(
        w.rb_mut(),
        Accum::Replace,
        v.transpose(),
        c.rb(),
        1.0f32,
        par,
    );
    let op_t = if transpose { t.transpose() } else { t };
    matmul(tw.rb_mut(), Accum::Replace, op_t, w.rb(), 1.0f32, par);
    matmul(c, Accum::Add, v, tw.rb(), -1.0f32, par);
}
