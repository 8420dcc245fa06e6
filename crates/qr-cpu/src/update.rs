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

/// Runs `f` on `chunks` column blocks of `c` side by side on the rayon
/// pool, each with its own `per_col * cols` share of `scratch`. The columns
/// of a block reflector's product are independent, so each chunk runs the
/// whole `larfb` on one thread with its data in that core's cache: for the
/// short, wide products of `orgqr` and `ormqr` (`k` rows of `W`) this scales
/// better than splitting each of the three products over the pool.
pub(crate) fn for_column_chunks<F>(
    c: MatMut<'_, f32>,
    scratch: &mut [f32],
    per_col: usize,
    chunks: usize,
    f: &F,
) where
    F: Fn(MatMut<'_, f32>, &mut [f32]) + Sync,
{
    let n = c.ncols();
    if chunks <= 1 || n < 2 {
        f(c, scratch);
        return;
    }
    let left = chunks / 2;
    let split = n * left / chunks;
    let (a, b) = c.split_at_col_mut(split);
    let (sa, sb) = scratch.split_at_mut(split * per_col);
    rayon::join(
        || for_column_chunks(a, sa, per_col, left, f),
        || for_column_chunks(b, sb, per_col, chunks - left, f),
    );
}

/// `L = Q L` (`transpose == false`) or `L = Q^T L` (`true`) for
/// `Q = I - V T V^T`, given `D = L^T` (`k x m`): `D = D op(Q)^T` as
/// `W = D V`, `W = W op(T)^T`, `D -= W V^T`. The same product as
/// [`apply_block_reflector`], for an `L` stored row-major: faer's products
/// run faster on the column-major `D` (table "orgqr / ormqr: layout" in
/// docs/perf/qr-cpu.md). `scratch` holds `2 * k * ib`.
pub(crate) fn apply_block_reflector_transposed(
    v: MatRef<'_, f32>,
    t: MatRef<'_, f32>,
    transpose: bool,
    d: MatMut<'_, f32>,
    scratch: &mut [f32],
    par: Par,
) {
    let (m, ib) = v.shape();
    let k = d.nrows();
    assert!(
        d.ncols() == m && t.nrows() == ib && t.ncols() == ib,
        "shapes disagree"
    );
    if k == 0 || m == 0 || ib == 0 {
        return;
    }
    let (w, tw) = scratch[..2 * k * ib].split_at_mut(k * ib);
    let mut w = MatMut::from_column_major_slice_mut(w, k, ib);
    let mut tw = MatMut::from_column_major_slice_mut(tw, k, ib);
    matmul(w.rb_mut(), Accum::Replace, d.rb(), v, 1.0f32, par);
    let op_t = if transpose { t } else { t.transpose() };
    matmul(tw.rb_mut(), Accum::Replace, w.rb(), op_t, 1.0f32, par);
    matmul(d, Accum::Add, tw.rb(), v.transpose(), -1.0f32, par);
}
