//! The gate of `qr`.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef, Par};
use qr_core::{EPS_F32, Info, Operation, QrError, Reflectors, Shape, upper_triangle};

use super::measure::{orth, per_matrix, q64_of, qerr, widen};
use super::{Metric, OpMatrixGate, OpReport};
use crate::gate::{one_norm, one_norm_where, scaled};

/// What `qr` returned for a batch.
#[derive(Clone, Copy, Debug)]
pub struct QrOutputs<'a> {
    /// `Q`, `batch * n * n`, row-major.
    pub q: &'a [f32],
    /// `R`, `batch * n * n`, row-major.
    pub r: &'a [f32],
    /// Status per matrix.
    pub info: &'a [Info],
}

/// Gates `qr`'s outputs for the batch `a`: `recon`, `orth` and `qerr` of
/// its `Q` (against `Q64` of `geqrf`'s reflectors) and `split`, the entries
/// that differ from `geqrf` (`geqrf_info`, `R = triu(H)`) and `orgqr`
/// (`orgqr_q`) run on the same input, which must be none.
pub fn check_qr(
    a: &[f32],
    geqrf: Reflectors<'_>,
    geqrf_info: &[Info],
    orgqr_q: &[f32],
    qr: QrOutputs<'_>,
) -> Result<OpReport, QrError> {
    let shape = geqrf.shape();
    let len = shape.a_len();
    for (what, got) in [
        ("a", a.len()),
        ("orgqr q", orgqr_q.len()),
        ("q", qr.q.len()),
        ("r", qr.r.len()),
    ] {
        Shape::check_len(what, len, got)?;
    }
    Shape::check_len("geqrf info", shape.info_len(), geqrf_info.len())?;
    Shape::check_len("info", shape.info_len(), qr.info.len())?;
    let mut triu = vec![0.0f32; len];
    upper_triangle(shape, geqrf.h(), geqrf_info, &mut triu);
    let n = shape.n();
    let matrices = per_matrix(shape, |b, par| {
        let info = qr.info[b];
        if !info.is_ok() {
            return OpMatrixGate::not_measured(info);
        }
        let m = b * n * n..(b + 1) * n * n;
        let split = usize::from(info != geqrf_info[b])
            + differing(&qr.r[m.clone()], &triu[m.clone()])
            + differing(&qr.q[m.clone()], &orgqr_q[m.clone()]);
        let q64 = q64_of(geqrf, b, par);
        let qm = widen(&qr.q[m.clone()], n, n);
        let recon = recon(
            widen(&a[m.clone()], n, n).as_ref(),
            qm.as_ref(),
            widen(&qr.r[m], n, n).as_ref(),
            par,
        );
        OpMatrixGate {
            info,
            values: vec![
                recon,
                orth(qm.as_ref(), par),
                qerr(qm.as_ref(), q64.as_ref()),
                split as f64,
            ],
        }
    });
    Ok(OpReport {
        metrics: Metric::of(Operation::Qr),
        matrices,
    })
}

/// Entries of `x` and `y` that are not the same bits; every NaN matches
/// every NaN, since the contract asks for NaN, not for one NaN pattern.
pub fn differing(x: &[f32], y: &[f32]) -> usize {
    x.iter()
        .zip(y)
        .filter(|(a, b)| a.to_bits() != b.to_bits() && !(a.is_nan() && b.is_nan()))
        .count()
        + x.len().abs_diff(y.len())
}

fn recon(a: MatRef<'_, f64>, q: MatRef<'_, f64>, r: MatRef<'_, f64>, par: Par) -> f64 {
    let n = a.nrows();
    let mut qr = Mat::<f64>::zeros(n, n);
    // A full product, not a triangular one: R's lower triangle is whatever
    // the backend returned, and it counts.
    matmul(qr.as_mut(), Accum::Replace, q, r, 1.0, par);
    let diff = one_norm_where(qr.as_ref(), |_, _| true, |x, i, j| a[(i, j)] - x);
    scaled(diff, n as f64 * EPS_F32 * one_norm(a))
}
