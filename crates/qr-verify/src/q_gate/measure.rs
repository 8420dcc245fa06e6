//! What the gates share: the loop over a batch's matrices, `Q64`, and the
//! errors of a `Q` that `orgqr` and `qr` both return.

use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, Mat, MatRef, Par};
use qr_core::{EPS_F32, Reflectors, Shape};
use rayon::prelude::*;

use super::OpMatrixGate;
use crate::gate::{one_norm_where, scaled, symmetric_one_norm};
use crate::householder::q_from_reflectors;

/// Runs `one(b, par)` for every matrix of `shape`: in parallel over the
/// matrices when the batch can fill the rayon pool, else one at a time with
/// parallel products (which also bounds memory), as [`crate::check`] does.
pub(super) fn per_matrix(
    shape: Shape,
    one: impl Fn(usize, Par) -> OpMatrixGate + Sync,
) -> Vec<OpMatrixGate> {
    let count = if shape.n() == 0 { 0 } else { shape.batch() };
    if count >= rayon::current_num_threads() {
        (0..count)
            .into_par_iter()
            .map(|b| one(b, Par::Seq))
            .collect()
    } else {
        (0..count).map(|b| one(b, Par::rayon(0))).collect()
    }
}

/// A row-major `f32` matrix widened into faer's layout.
pub(super) fn widen(m: &[f32], rows: usize, cols: usize) -> Mat<f64> {
    Mat::from_fn(rows, cols, |i, j| f64::from(m[i * cols + j]))
}

/// `Q64` of matrix `b` of `f`.
pub(super) fn q64_of(f: Reflectors<'_>, b: usize, par: Par) -> Mat<f64> {
    let n = f.shape().n();
    let h = widen(&f.h()[b * n * n..(b + 1) * n * n], n, n);
    let tau: Vec<f64> = f.tau()[b * n..(b + 1) * n]
        .iter()
        .map(|&t| f64::from(t))
        .collect();
    q_from_reflectors(h.as_ref(), &tau, par)
}

pub(super) fn qerr(q: MatRef<'_, f64>, q64: MatRef<'_, f64>) -> f64 {
    let n = q.nrows();
    let diff = one_norm_where(q, |_, _| true, |x, i, j| x - q64[(i, j)]);
    scaled(diff, n as f64 * EPS_F32)
}

pub(super) fn orth(q: MatRef<'_, f64>, par: Par) -> f64 {
    let n = q.nrows();
    let mut g = Mat::<f64>::zeros(n, n);
    // Q^T Q is symmetric: its lower triangle is enough (half the flops).
    triangular::matmul(
        g.as_mut(),
        BlockStructure::TriangularLower,
        Accum::Replace,
        q.transpose(),
        BlockStructure::Rectangular,
        q,
        BlockStructure::Rectangular,
        1.0,
        par,
    );
    let norm = symmetric_one_norm(g.as_ref(), |x, i, j| if i == j { x - 1.0 } else { x });
    scaled(norm, n as f64 * EPS_F32)
}
