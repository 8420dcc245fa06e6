//! The gate of `orgqr`.

use qr_core::{Info, Operation, QrError, Reflectors, Shape};

use super::measure::{orth, per_matrix, q64_of, qerr, widen};
use super::{Metric, OpMatrixGate, OpReport};

/// Gates `orgqr`'s `q` (`batch * n * n`, row-major) and `info` against
/// the reflectors `f` it was given: `qerr` and `orth` per matrix.
pub fn check_orgqr(f: Reflectors<'_>, q: &[f32], info: &[Info]) -> Result<OpReport, QrError> {
    let shape = f.shape();
    Shape::check_len("q", shape.a_len(), q.len())?;
    Shape::check_len("info", shape.info_len(), info.len())?;
    let n = shape.n();
    let matrices = per_matrix(shape, |b, par| {
        if !info[b].is_ok() {
            return OpMatrixGate::not_measured(info[b]);
        }
        let q64 = q64_of(f, b, par);
        let qm = widen(&q[b * n * n..(b + 1) * n * n], n, n);
        OpMatrixGate {
            info: info[b],
            values: vec![qerr(qm.as_ref(), q64.as_ref()), orth(qm.as_ref(), par)],
        }
    });
    Ok(OpReport {
        metrics: Metric::of(Operation::Orgqr),
        matrices,
    })
}
