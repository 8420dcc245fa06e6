//! Applying `op(Q)` of `geqrf`'s reflectors to a matrix `C` in place
//! (LAPACK `sormqr`), `C` row-major.
//!
//! Both sides reduce to one left-side product: `C op(Q) = (op(Q)^T C^T)^T`,
//! and the row-major `k x n` `C` read column-major is the `n x k` `C^T`.
//! For `L = op(Q) L` the blocks run first to last when `op(Q) = Q^T`
//! (`H_{n-1} ... H_0`, `H_0` applied first) and last to first when
//! `op(Q) = Q`, as in `sormqr`. Small orders apply one reflector at a time
//! along `C`'s contiguous rows instead (`sorm2r`).

use faer::reborrow::ReborrowMut;
use faer::{MatMut, MatRef, Par};
use qr_core::{ApplyQ, Info, QrError, Reflectors, Shape, Side, Transpose};

use crate::isa::multiversion;
use crate::larft::larft_view;
use crate::orgqr::{QWorkspace, copy_v};
use crate::tuning::QTuning;
use crate::update::{apply_block_reflector, apply_block_reflector_transposed, for_column_chunks};
use crate::vector::axpy;
use qr_core::all_finite;

/// The scratch [`ormqr_matrix`] needs for order `n`, `op` and `k`.
pub(crate) fn ormqr_workspace(
    n: usize,
    op: ApplyQ,
    k: usize,
    qt: &QTuning,
) -> Result<QWorkspace, QrError> {
    // The right side's unblocked pass runs on a transposed copy of C
    // (see `ormqr_matrix`).
    let copy = match (n <= qt.ormqr_small_n, op.side) {
        (true, Side::Right) => ApplyQ::c_len(Shape::new(1, n)?, k)?,
        _ => 0,
    };
    let ws = if n <= qt.ormqr_small_n {
        QWorkspace::unblocked(0, k)?
    } else {
        QWorkspace::blocked(n, qt.ormqr_block_for(n), k)?
    };
    ws.with_copy(copy)
}

/// Overwrites `c` (one matrix: `n x k` for the left side, `k x n` for the
/// right, row-major) with `op(Q) C` or `C op(Q)` for the reflectors `h`
/// (row-major `n x n`) and `tau`, or fills it with NaN and says why. A NaN
/// or an infinity already in `C` is not an `info`: it stays in the product.
/// `ws` must come from [`ormqr_workspace`] with the same arguments.
#[allow(clippy::too_many_arguments)] // the matrix, its scratch and its parallelism
pub(crate) fn ormqr_matrix(
    n: usize,
    h: &[f32],
    tau: &[f32],
    op: ApplyQ,
    k: usize,
    c: &mut [f32],
    qt: &QTuning,
    ws: &mut QWorkspace,
    par: Par,
    par_min: usize,
) -> Info {
    if !Reflectors::is_finite(h, tau, n) {
        c.fill(f32::NAN);
        return Info::NON_FINITE;
    }
    if k == 0 || n == 0 {
        return Info::OK;
    }
    let c_finite = all_finite(c);
    // `op(Q) L` with `L = C` (left) or `L = C^T` (right); `Q^T` runs the
    // reflectors first to last.
    let transpose = match op.side {
        Side::Left => op.transpose == Transpose::Yes,
        Side::Right => op.transpose == Transpose::No,
    };
    // Taken out for the pass (and put back) so that `ws` lends its other
    // buffers alongside.
    let mut copy = std::mem::take(&mut ws.c);
    match (n <= qt.ormqr_small_n, op.side) {
        (true, Side::Left) => orm2r_left(n, k, h, tau, transpose, c, &mut ws.w),
        // Rows of C hold the reflectors' dimension: transposed, one
        // reflector sweeps contiguous rows of k as on the left.
        (true, Side::Right) => {
            let ct = &mut copy[..n * k];
            transpose_into(k, n, c, ct);
            orm2r_left(n, k, h, tau, transpose, ct, &mut ws.w);
            transpose_into(n, k, ct, c);
        }
        (false, side) => {
            let l = match side {
                Side::Left => MatMut::from_column_major_slice_mut(c, k, n).transpose_mut(),
                Side::Right => MatMut::from_column_major_slice_mut(c, n, k),
            };
            let p = if k >= par_min { par } else { Par::Seq };
            let nb = qt.ormqr_block_for(n);
            ormqr_blocked(n, h, tau, transpose, l, nb, ws, p, par_min);
        }
    }
    ws.c = copy;
    // A finite C turned non-finite only by reflectors far from geqrf's, or
    // by a C near f32::MAX whose product does not fit.
    if c_finite && !all_finite(c) {
        c.fill(f32::NAN);
        return Info::OVERFLOW;
    }
    Info::OK
}

/// `L = Q^T L` (`transpose`) or `Q L` for the `n x k` view `l`, block by
/// block.
#[allow(clippy::too_many_arguments)] // the matrix, its scratch and its parallelism
fn ormqr_blocked(
    n: usize,
    h: &[f32],
    tau: &[f32],
    transpose: bool,
    mut l: MatMut<'_, f32>,
    nb: usize,
    ws: &mut QWorkspace,
    par: Par,
    par_min: usize,
) {
    let nb = nb.min(n);
    let k = l.ncols();
    let blocks = n.div_ceil(nb);
    for b in 0..blocks {
        let i = if transpose { b } else { blocks - 1 - b } * nb;
        let ib = nb.min(n - i);
        let m = n - i;
        let vm = copy_v(h, n, i, ib, &mut ws.v);
        larft_view(vm, &tau[i..i + ib], &mut ws.t, ib, &mut ws.g);
        let tm = MatRef::from_column_major_slice(&ws.t[..ib * ib], ib, ib);
        let p = if m >= par_min { par } else { Par::Seq };
        // A row-major L (the left side's C) is multiplied through its
        // column-major transpose: see `apply_block_reflector_transposed`.
        let apply = |c: MatMut<'_, f32>, s: &mut [f32]| {
            if c.col_stride() == 1 && c.ncols() > 1 {
                apply_block_reflector_transposed(vm, tm, transpose, c.transpose_mut(), s, Par::Seq)
            } else {
                apply_block_reflector(vm, tm, transpose, c, s, Par::Seq)
            }
        };
        let c = l.rb_mut().submatrix_mut(i, 0, m, k);
        for_column_chunks(c, &mut ws.w, 2 * ib, p.degree(), &apply);
    }
}

/// The order in which `n` reflectors are applied.
fn order(n: usize, first_to_last: bool) -> impl Iterator<Item = usize> {
    (0..n).map(move |j| if first_to_last { j } else { n - 1 - j })
}

multiversion! {
    /// `C = Q^T C` (`transpose`) or `Q C` for the row-major `n x k` `c`,
    /// one reflector at a time; `w` holds `k`.
    fn orm2r_left(
        n: usize,
        k: usize,
        h: &[f32],
        tau: &[f32],
        transpose: bool,
        c: &mut [f32],
        w: &mut [f32],
    ) => orm2r_left_body
}

#[inline(always)]
fn orm2r_left_body(
    n: usize,
    k: usize,
    h: &[f32],
    tau: &[f32],
    transpose: bool,
    c: &mut [f32],
    w: &mut [f32],
) {
    let w = &mut w[..k];
    for j in order(n, transpose) {
        let t = tau[j];
        if t == 0.0 {
            continue;
        }
        // w = v^T C[j.., :], v[j] = 1; then C[j.., :] -= t v w^T.
        w.copy_from_slice(&c[j * k..(j + 1) * k]);
        for i in j + 1..n {
            axpy(w, h[i * n + j], &c[i * k..(i + 1) * k]);
        }
        axpy(&mut c[j * k..(j + 1) * k], -t, w);
        for i in j + 1..n {
            axpy(&mut c[i * k..(i + 1) * k], -t * h[i * n + j], w);
        }
    }
}

/// Writes the row-major `rows x cols` `src` transposed into the row-major
/// `cols x rows` `dst`, in tiles of 8 x 8: 8 rows of a power-of-two stride
/// still fit the ways of one L1 set, 16 do not.
fn transpose_into(rows: usize, cols: usize, src: &[f32], dst: &mut [f32]) {
    const TILE: usize = 8;
    let (src, dst) = (&src[..rows * cols], &mut dst[..rows * cols]);
    for r0 in (0..rows).step_by(TILE) {
        let r1 = (r0 + TILE).min(rows);
        for c0 in (0..cols).step_by(TILE) {
            let c1 = (c0 + TILE).min(cols);
            for r in r0..r1 {
                let row = &src[r * cols + c0..r * cols + c1];
                for (c, &x) in (c0..c1).zip(row) {
                    dst[c * rows + r] = x;
                }
            }
        }
    }
}
