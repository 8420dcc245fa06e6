//! The gate of `ormqr`.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef, Par};
use qr_core::{ApplyQ, EPS_F32, Info, QrError, Reflectors, Side, Transpose};

use super::measure::{per_matrix, q64_of, widen};
use super::{Metric, OpMatrixGate, OpReport};
use crate::gate::{one_norm, one_norm_where, scaled};

/// One `ormqr` result to gate: the product `op` and what the backend
/// returned (`c` overwritten, `info`).
#[derive(Clone, Copy, Debug)]
pub struct Applied<'a> {
    /// The product computed.
    pub op: ApplyQ,
    /// The backend's result, laid out as its `C`.
    pub out: &'a [f32],
    /// The backend's status per matrix.
    pub info: &'a [Info],
}

/// Gates `ormqr` results against the reflectors `f` and the `C` (`k`
/// columns on the left, rows on the right) they were applied to: one value
/// per entry of `applied`, in its order. A matrix is measured when every
/// result's `info` of it is OK; otherwise it carries the first non-OK code.
pub fn check_ormqr(
    f: Reflectors<'_>,
    k: usize,
    c: &[f32],
    applied: &[Applied<'_>],
) -> Result<OpReport, QrError> {
    let shape = f.shape();
    ApplyQ::check(shape, k, c.len(), shape.info_len())?;
    for a in applied {
        ApplyQ::check(shape, k, a.out.len(), a.info.len())?;
    }
    let (n, len) = (shape.n(), shape.n() * k);
    let matrices = per_matrix(shape, |b, par| {
        if let Some(bad) = applied.iter().map(|a| a.info[b]).find(|i| !i.is_ok()) {
            return OpMatrixGate::not_measured(bad);
        }
        let q64 = q64_of(f, b, par);
        let cb = &c[b * len..(b + 1) * len];
        let values = applied
            .iter()
            .map(|a| {
                apply_error(
                    a.op,
                    q64.as_ref(),
                    n,
                    k,
                    cb,
                    &a.out[b * len..(b + 1) * len],
                    par,
                )
            })
            .collect();
        OpMatrixGate {
            info: Info::OK,
            values,
        }
    });
    Ok(OpReport {
        metrics: applied.iter().map(|a| Metric::Apply(a.op)).collect(),
        matrices,
    })
}

/// The scaled error of one `ormqr` result `out` for the `C` `c`, both
/// row-major (`n x k` on the left, `k x n` on the right).
fn apply_error(
    op: ApplyQ,
    q64: MatRef<'_, f64>,
    n: usize,
    k: usize,
    c: &[f32],
    out: &[f32],
    par: Par,
) -> f64 {
    let opq = match op.transpose {
        Transpose::No => q64,
        Transpose::Yes => q64.transpose(),
    };
    let (rows, cols) = match op.side {
        Side::Left => (n, k),
        Side::Right => (k, n),
    };
    let cm = widen(c, rows, cols);
    let mut want = Mat::<f64>::zeros(rows, cols);
    match op.side {
        Side::Left => matmul(want.as_mut(), Accum::Replace, opq, cm.as_ref(), 1.0, par),
        Side::Right => matmul(want.as_mut(), Accum::Replace, cm.as_ref(), opq, 1.0, par),
    }
    let diff = one_norm_where(
        want.as_ref(),
        |_, _| true,
        |x, i, j| f64::from(out[i * cols + j]) - x,
    );
    scaled(diff, n as f64 * EPS_F32 * one_norm(cm.as_ref()))
}
